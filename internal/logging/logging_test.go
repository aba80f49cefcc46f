package logging

import (
	"bytes"
	"encoding/json"
	"io"
	"strings"
	"testing"

	"github.com/sirupsen/logrus"

	"github.com/kube-safe-scheduler/extender/settings/settingstest"
)

func TestLevelsAndFormat(t *testing.T) {
	for name, want := range map[string]logrus.Level{"TRACE": logrus.TraceLevel, "warning": logrus.WarnLevel, "ALERT": logrus.FatalLevel} {
		c, err := settingstest.Parse[Config](map[string]string{"LOG_LEVEL": name})
		if err != nil {
			t.Fatal(err)
		}
		if got := c.New(io.Discard).GetLevel(); got != want {
			t.Errorf("LOG_LEVEL=%s: level %v, want %v", name, got, want)
		}
	}
	c, _ := settingstest.Parse[Config](map[string]string{"LOG_FORMAT": "json"})
	var buf bytes.Buffer
	c.New(&buf).Info("hello")
	var line map[string]any
	if err := json.Unmarshal(buf.Bytes(), &line); err != nil || line["msg"] != "hello" {
		t.Errorf("json format wrote %q", buf.String())
	}
	if _, err := settingstest.Parse[Config](map[string]string{"LOG_LEVEL": "LOUD"}); err == nil || !strings.Contains(err.Error(), "invalid LOG_LEVEL") {
		t.Errorf("LOG_LEVEL=LOUD: %v", err)
	}
}
