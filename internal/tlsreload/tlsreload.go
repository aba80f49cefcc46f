// Package tlsreload serves TLS (optionally mutual TLS) from certificate, key and CA files that it
// re-reads while the program runs.
//
// Certificates are rotated by replacing their files: cert-manager and the kubelet swap a symlink
// to a new directory, other tools write the files in place. A Reloader polls the files' contents
// every ReloadInterval and, when they changed and still make a valid certificate (and CA pool),
// swaps the configuration new handshakes use; connections already open keep theirs, so a request
// in flight never fails. A bad new file (half written, key not matching the certificate) is
// logged and the previous configuration kept until a later poll reads a good one.
package tlsreload

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync/atomic"
	"time"

	"github.com/sirupsen/logrus"

	"github.com/kube-safe-scheduler/extender/framework"
	"github.com/kube-safe-scheduler/extender/settings"
)

// DefaultReloadInterval is how often the files are polled.
const DefaultReloadInterval = 5 * time.Second

// Config is the TLS configuration of a server. With no CertFile the server speaks plain HTTP.
type Config struct {
	CertFile       string             `json:"certFile" env:"TLS_CERT_FILE" flag:"tls-cert-file" help:"PEM certificate (chain) to serve HTTPS with; empty serves plain HTTP; re-read when it changes"`
	KeyFile        string             `json:"keyFile" env:"TLS_KEY_FILE" flag:"tls-key-file" help:"PEM private key of TLS_CERT_FILE; re-read when it changes"`
	ClientCAFile   string             `json:"clientCAFile" env:"TLS_CLIENT_CA_FILE" flag:"tls-client-ca-file" help:"PEM CA bundle: when set, every client must present a certificate it signed (mutual TLS); re-read when it changes"`
	MinVersion     string             `json:"minVersion" env:"TLS_MIN_VERSION" flag:"tls-min-version" help:"lowest TLS version accepted: 1.2 or 1.3"`
	AllowedClients string             `json:"allowedClients" env:"TLS_ALLOWED_CLIENTS" flag:"tls-allowed-clients" help:"comma-separated names (certificate CN or DNS SAN) of the clients accepted; empty accepts any client TLS_CLIENT_CA_FILE signed"`
	ReloadInterval framework.Duration `json:"reloadInterval" env:"TLS_RELOAD_INTERVAL" flag:"tls-reload-interval" help:"how often the certificate, key and CA files are checked for changes"`
}

// DefaultConfig is plain HTTP, TLS 1.2 and up once a certificate is given, files polled every
// DefaultReloadInterval.
func DefaultConfig() Config {
	return Config{MinVersion: "1.2", ReloadInterval: framework.Duration(DefaultReloadInterval)}
}

// Enabled reports whether the configuration serves TLS.
func (c Config) Enabled() bool { return c.CertFile != "" }

var minVersions = map[string]uint16{"1.2": tls.VersionTLS12, "1.3": tls.VersionTLS13}

// Validate reports every inconsistent setting as a settings.FieldError. It reads no file: New
// does, and reports unreadable ones.
func (c Config) Validate() error {
	var errs []error
	if c.KeyFile != "" && c.CertFile == "" {
		errs = append(errs, settings.Fieldf("keyFile", "a key without a certificate: set TLS_CERT_FILE (or --tls-cert-file) too"))
	}
	if c.CertFile != "" && c.KeyFile == "" {
		errs = append(errs, settings.Fieldf("certFile", "a certificate without its key: set TLS_KEY_FILE (or --tls-key-file) too"))
	}
	if c.ClientCAFile != "" && c.CertFile == "" {
		errs = append(errs, settings.Fieldf("clientCAFile", "client certificates need HTTPS: set TLS_CERT_FILE and TLS_KEY_FILE too"))
	}
	if c.AllowedClients != "" && c.ClientCAFile == "" {
		errs = append(errs, settings.Fieldf("allowedClients", "restricting clients needs client certificates: set TLS_CLIENT_CA_FILE too"))
	}
	if err := settings.OneOf("minVersion", c.MinVersion, "1.2", "1.3"); err != nil {
		errs = append(errs, err)
	}
	if err := settings.Range("reloadInterval", c.ReloadInterval.D(), 100*time.Millisecond, time.Hour); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// allowed returns the allowed client names, nil for any.
func (c Config) allowed() []string {
	var out []string
	for _, n := range strings.Split(c.AllowedClients, ",") {
		if n = strings.TrimSpace(n); n != "" {
			out = append(out, n)
		}
	}
	return out
}

// files are the raw contents a configuration was built from.
type files struct{ cert, key, ca []byte }

func (f files) equal(o files) bool {
	return bytes.Equal(f.cert, o.cert) && bytes.Equal(f.key, o.key) && bytes.Equal(f.ca, o.ca)
}

// state is one configuration for new handshakes, built from files.
type state struct {
	files files
	tls   *tls.Config
	leaf  *x509.Certificate
}

// Reloader holds the current TLS configuration and re-reads its files.
type Reloader struct {
	cfg     Config
	log     logrus.FieldLogger
	allowed []string
	current atomic.Pointer[state]
}

// New validates cfg, reads its files and returns a Reloader serving them. Unreadable or invalid
// files are settings.FieldErrors of the setting naming them.
func New(cfg Config, log logrus.FieldLogger) (*Reloader, error) {
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if !cfg.Enabled() {
		return nil, errors.New("tlsreload: no certificate configured")
	}
	r := &Reloader{cfg: cfg, log: log, allowed: cfg.allowed()}
	f, err := r.read()
	if err != nil {
		return nil, err
	}
	s, err := r.build(f)
	if err != nil {
		return nil, err
	}
	r.current.Store(s)
	return r, nil
}

// read returns the files' contents; an error is a FieldError of the setting naming the file.
func (r *Reloader) read() (files, error) {
	var f files
	var err error
	if f.cert, err = os.ReadFile(r.cfg.CertFile); err != nil {
		return f, settings.Fieldf("certFile", "cannot read the certificate: %v", err)
	}
	if f.key, err = os.ReadFile(r.cfg.KeyFile); err != nil {
		return f, settings.Fieldf("keyFile", "cannot read the key: %v", err)
	}
	if r.cfg.ClientCAFile != "" {
		if f.ca, err = os.ReadFile(r.cfg.ClientCAFile); err != nil {
			return f, settings.Fieldf("clientCAFile", "cannot read the client CA bundle: %v", err)
		}
	}
	return f, nil
}

// build makes the server configuration of f.
func (r *Reloader) build(f files) (*state, error) {
	pair, err := tls.X509KeyPair(f.cert, f.key)
	if err != nil {
		return nil, settings.Fieldf("keyFile", "%s and %s do not make a certificate: %v", r.cfg.CertFile, r.cfg.KeyFile, err)
	}
	leaf := pair.Leaf
	if leaf == nil {
		if leaf, err = x509.ParseCertificate(pair.Certificate[0]); err != nil {
			return nil, settings.Fieldf("certFile", "%s: %v", r.cfg.CertFile, err)
		}
	}
	c := &tls.Config{
		MinVersion:   minVersions[r.cfg.MinVersion],
		Certificates: []tls.Certificate{pair},
		// HTTP/1.1 only: the scheduler's extender client keeps its connections alive.
		NextProtos: []string{"http/1.1"},
	}
	if r.cfg.ClientCAFile != "" {
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(f.ca) {
			return nil, settings.Fieldf("clientCAFile", "%s holds no PEM certificate", r.cfg.ClientCAFile)
		}
		c.ClientCAs = pool
		c.ClientAuth = tls.RequireAndVerifyClientCert
		// A resumed session skips the client's certificate: without tickets every new
		// connection is checked against the CA and the allowed names of its time.
		c.SessionTicketsDisabled = true
		if len(r.allowed) > 0 {
			c.VerifyConnection = r.verifyClient
		}
	}
	return &state{files: f, tls: c, leaf: leaf}, nil
}

// verifyClient accepts a verified client certificate whose CN or a DNS SAN is allowed.
func (r *Reloader) verifyClient(cs tls.ConnectionState) error {
	if len(cs.PeerCertificates) == 0 {
		return errors.New("no client certificate")
	}
	leaf := cs.PeerCertificates[0]
	if slices.Contains(r.allowed, leaf.Subject.CommonName) {
		return nil
	}
	for _, n := range leaf.DNSNames {
		if slices.Contains(r.allowed, n) {
			return nil
		}
	}
	return fmt.Errorf("client certificate %q (DNS names %v) is not among TLS_ALLOWED_CLIENTS", leaf.Subject.CommonName, leaf.DNSNames)
}

// ServerConfig returns the configuration to serve with: each handshake uses the configuration
// current at its start.
func (r *Reloader) ServerConfig() *tls.Config {
	return &tls.Config{
		MinVersion: minVersions[r.cfg.MinVersion],
		NextProtos: []string{"http/1.1"},
		GetConfigForClient: func(*tls.ClientHelloInfo) (*tls.Config, error) {
			return r.current.Load().tls, nil
		},
	}
}

// Certificate returns the leaf certificate currently served.
func (r *Reloader) Certificate() *x509.Certificate { return r.current.Load().leaf }

// Reload re-reads the files once: it returns whether the configuration changed, and an error
// (the previous configuration is kept) when the new files are unreadable or invalid.
func (r *Reloader) Reload() (bool, error) {
	f, err := r.read()
	if err != nil {
		return false, err
	}
	old := r.current.Load()
	if f.equal(old.files) {
		return false, nil
	}
	s, err := r.build(f)
	if err != nil {
		return false, err
	}
	r.current.Store(s)
	return true, nil
}

// Run polls the files every ReloadInterval until ctx is done, logging each change and each
// failure (a failure is logged once until the files change again).
func (r *Reloader) Run(ctx context.Context) {
	t := time.NewTicker(r.cfg.ReloadInterval.D())
	defer t.Stop()
	lastErr := ""
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		changed, err := r.Reload()
		switch {
		case err != nil:
			if msg := err.Error(); msg != lastErr {
				r.log.Errorf("TLS files changed but cannot be used, keeping the previous certificate: %v", err)
				lastErr = msg
			}
		case changed:
			lastErr = ""
			leaf := r.Certificate()
			r.log.WithFields(logrus.Fields{"subject": leaf.Subject.CommonName, "serial": leaf.SerialNumber.String(),
				"notAfter": leaf.NotAfter.UTC().Format(time.RFC3339)}).Info("TLS certificate reloaded")
		default:
			lastErr = ""
		}
	}
}

// ClientConfig returns the configuration of a client (the probe subcommand): it verifies the
// server against caFile (the system roots when empty) and presents certFile/keyFile when given.
func ClientConfig(caFile, certFile, keyFile string) (*tls.Config, error) {
	c := &tls.Config{MinVersion: tls.VersionTLS12}
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, err
		}
		c.RootCAs = x509.NewCertPool()
		if !c.RootCAs.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("%s holds no PEM certificate", caFile)
		}
	}
	if (certFile == "") != (keyFile == "") {
		return nil, errors.New("a client certificate needs both its certificate and its key file")
	}
	if certFile != "" {
		pair, err := tls.LoadX509KeyPair(certFile, keyFile)
		if err != nil {
			return nil, err
		}
		c.Certificates = []tls.Certificate{pair}
	}
	return c, nil
}
