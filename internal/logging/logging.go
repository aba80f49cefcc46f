// Package logging builds the logrus logger both commands (the extender and the node annotator)
// use, from the original design's LOG_LEVEL names.
package logging

import (
	"io"

	"github.com/sirupsen/logrus"

	"github.com/kube-safe-scheduler/extender/settings"
)

// levels maps the original's level names onto logrus levels. ALERT, the original's most severe
// level, keeps only fatal messages.
var levels = map[string]logrus.Level{
	"TRACE": logrus.TraceLevel, "DEBUG": logrus.DebugLevel, "INFO": logrus.InfoLevel,
	"WARNING": logrus.WarnLevel, "ERROR": logrus.ErrorLevel, "ALERT": logrus.FatalLevel,
}

// Config is a logger's level and format.
type Config struct {
	Level  string // LOG_LEVEL: TRACE, DEBUG, INFO, WARNING, ERROR or ALERT
	Format string // LOG_FORMAT: text or json
}

// Declare adds LOG_LEVEL (--log-level) and LOG_FORMAT (--log-format) to s.
func (c *Config) Declare(s *settings.Set) {
	s.Enum(&c.Level, "LOG_LEVEL", "log-level", "INFO",
		[]string{"TRACE", "DEBUG", "INFO", "WARNING", "ERROR", "ALERT"}, "log level")
	s.Enum(&c.Format, "LOG_FORMAT", "log-format", "text", []string{"text", "json"}, "log format")
}

// New returns a logger writing to w at c's level and format.
func (c Config) New(w io.Writer) *logrus.Logger {
	log := logrus.New()
	log.SetOutput(w)
	level, ok := levels[c.Level]
	if !ok {
		level = logrus.InfoLevel // the zero Config; Declare admits only the names above
	}
	log.SetLevel(level)
	if c.Format == "json" {
		log.SetFormatter(&logrus.JSONFormatter{})
	} else {
		log.SetFormatter(&logrus.TextFormatter{FullTimestamp: true})
	}
	return log
}
