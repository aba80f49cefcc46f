package tlsreload

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"io"
	"math/big"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/sirupsen/logrus"
	"github.com/sirupsen/logrus/hooks/test"

	"github.com/kube-safe-scheduler/extender/framework"
	"github.com/kube-safe-scheduler/extender/settings"
)

// testCA is a certificate authority made by the test.
type testCA struct {
	cert *x509.Certificate
	key  *ecdsa.PrivateKey
	pem  []byte
}

var serial atomic.Int64

func newCA(t *testing.T, name string) *testCA {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial.Add(1)), Subject: pkix.Name{CommonName: name},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageCertSign, BasicConstraintsValid: true, IsCA: true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	cert, _ := x509.ParseCertificate(der)
	return &testCA{cert: cert, key: key, pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}
}

// issue returns a PEM certificate and key: a server's for 127.0.0.1 and localhost, or a
// client's named cn with DNS names dns.
func (ca *testCA) issue(t *testing.T, cn string, server bool, dns ...string) (certPEM, keyPEM []byte, serialNo int64) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serialNo = serial.Add(1)
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serialNo), Subject: pkix.Name{CommonName: cn}, DNSNames: dns,
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	if server {
		tmpl.ExtKeyUsage = []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}
		tmpl.IPAddresses = []net.IP{net.IPv4(127, 0, 0, 1)}
		tmpl.DNSNames = append(tmpl.DNSNames, "localhost")
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, ca.cert, &key.PublicKey, ca.key)
	if err != nil {
		t.Fatal(err)
	}
	kder, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder}), serialNo
}

func (ca *testCA) clientTLS(t *testing.T, cn string, serverCAs ...*testCA) *tls.Config {
	t.Helper()
	c := &tls.Config{RootCAs: x509.NewCertPool()}
	for _, s := range serverCAs {
		c.RootCAs.AddCert(s.cert)
	}
	if ca != nil {
		certPEM, keyPEM, _ := ca.issue(t, cn, false)
		pair, err := tls.X509KeyPair(certPEM, keyPEM)
		if err != nil {
			t.Fatal(err)
		}
		c.Certificates = []tls.Certificate{pair}
	}
	return c
}

func write(t *testing.T, path string, data []byte) {
	t.Helper()
	if err := os.WriteFile(path, data, 0o600); err != nil {
		t.Fatal(err)
	}
}

// serve serves "ok" over TLS with r on 127.0.0.1 and returns the base URL.
func serve(t *testing.T, r *Reloader) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	hs := &http.Server{
		Handler:  http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { io.WriteString(w, "ok") }),
		ErrorLog: nil,
	}
	go hs.Serve(tls.NewListener(ln, r.ServerConfig()))
	t.Cleanup(func() { hs.Close() })
	return "https://" + ln.Addr().String()
}

// get requests url with a fresh connection and returns the serial number of the server's
// certificate.
func get(url string, c *tls.Config) (int64, error) {
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{TLSClientConfig: c, DisableKeepAlives: true}}
	resp, err := client.Get(url)
	if err != nil {
		return 0, err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		return 0, err
	}
	if resp.StatusCode != 200 || string(b) != "ok" {
		return 0, errors.New("bad answer " + resp.Status)
	}
	return resp.TLS.PeerCertificates[0].SerialNumber.Int64(), nil
}

type pki struct {
	dir          string
	serverCA     *testCA
	clientCA     *testCA
	serverSerial int64
	cfg          Config
}

// newPKI writes a server certificate and a client CA into a directory and returns a
// configuration using them.
func newPKI(t *testing.T) *pki {
	t.Helper()
	p := &pki{dir: t.TempDir(), serverCA: newCA(t, "server CA"), clientCA: newCA(t, "client CA")}
	certPEM, keyPEM, s := p.serverCA.issue(t, "extender", true)
	p.serverSerial = s
	write(t, filepath.Join(p.dir, "tls.crt"), certPEM)
	write(t, filepath.Join(p.dir, "tls.key"), keyPEM)
	write(t, filepath.Join(p.dir, "ca.crt"), p.clientCA.pem)
	p.cfg = DefaultConfig()
	p.cfg.CertFile, p.cfg.KeyFile = filepath.Join(p.dir, "tls.crt"), filepath.Join(p.dir, "tls.key")
	p.cfg.ClientCAFile = filepath.Join(p.dir, "ca.crt")
	return p
}

func quietLog() *logrus.Logger {
	l, _ := test.NewNullLogger()
	return l
}

// A client with a certificate of the client CA is served; without one, with one of another CA,
// or with a name not allowed, the handshake is refused.
func TestMutualTLS(t *testing.T) {
	p := newPKI(t)
	p.cfg.AllowedClients = "my-scheduler, scheduler.example"
	r, err := New(p.cfg, quietLog())
	if err != nil {
		t.Fatal(err)
	}
	url := serve(t, r)
	stranger := newCA(t, "stranger CA")

	good := map[string]*tls.Config{
		"allowed CN":      p.clientCA.clientTLS(t, "my-scheduler", p.serverCA),
		"allowed DNS SAN": dnsClient(t, p.clientCA, "other", "scheduler.example", p.serverCA),
	}
	for name, c := range good {
		if s, err := get(url, c); err != nil || s != p.serverSerial {
			t.Errorf("%s: serial %d, error %v; want served with serial %d", name, s, err, p.serverSerial)
		}
	}
	bad := map[string]*tls.Config{
		"no certificate": (*testCA)(nil).clientTLS(t, "", p.serverCA),
		"unknown CA":     stranger.clientTLS(t, "my-scheduler", p.serverCA),
		"CN not allowed": p.clientCA.clientTLS(t, "intruder", p.serverCA),
	}
	for name, c := range bad {
		_, err := get(url, c)
		if err == nil {
			t.Errorf("%s: served, want refused", name)
			continue
		}
		// TLS 1.3: the client learns of the refusal from the server's alert.
		if !strings.Contains(err.Error(), "tls:") {
			t.Errorf("%s: error %v, want a TLS handshake refusal", name, err)
		}
	}
}

func dnsClient(t *testing.T, ca *testCA, cn, dns string, serverCA *testCA) *tls.Config {
	certPEM, keyPEM, _ := ca.issue(t, cn, false, dns)
	pair, err := tls.X509KeyPair(certPEM, keyPEM)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(serverCA.cert)
	return &tls.Config{RootCAs: roots, Certificates: []tls.Certificate{pair}}
}

// Without a client CA any client is served (server-only TLS).
func TestServerOnlyTLS(t *testing.T) {
	p := newPKI(t)
	p.cfg.ClientCAFile = ""
	r, err := New(p.cfg, quietLog())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := get(serve(t, r), (*testCA)(nil).clientTLS(t, "", p.serverCA)); err != nil {
		t.Fatal(err)
	}
}

// TLS_MIN_VERSION 1.3 refuses a TLS 1.2 client; 1.2 serves it.
func TestMinVersion(t *testing.T) {
	for _, tc := range []struct {
		min   string
		serve bool
	}{{"1.2", true}, {"1.3", false}} {
		p := newPKI(t)
		p.cfg.ClientCAFile, p.cfg.MinVersion = "", tc.min
		r, err := New(p.cfg, quietLog())
		if err != nil {
			t.Fatal(err)
		}
		c := (*testCA)(nil).clientTLS(t, "", p.serverCA)
		c.MaxVersion = tls.VersionTLS12
		_, err = get(serve(t, r), c)
		if (err == nil) != tc.serve {
			t.Errorf("min %s, TLS 1.2 client: error %v, want served %v", tc.min, err, tc.serve)
		}
	}
}

func TestMisconfiguration(t *testing.T) {
	p := newPKI(t)
	missing := filepath.Join(p.dir, "missing.pem")
	cases := []struct {
		name  string
		edit  func(*Config)
		field string
		want  string
	}{
		{"key without certificate", func(c *Config) { c.CertFile = "" }, "keyFile", "without a certificate"},
		{"certificate without key", func(c *Config) { c.KeyFile = "" }, "certFile", "without its key"},
		{"min version", func(c *Config) { c.MinVersion = "1.1" }, "minVersion", `"1.1" is not one of 1.2, 1.3`},
		{"allowed without CA", func(c *Config) { c.ClientCAFile = ""; c.AllowedClients = "x" }, "allowedClients", "TLS_CLIENT_CA_FILE"},
		{"reload interval", func(c *Config) { c.ReloadInterval = 0 }, "reloadInterval", "out of range"},
		{"unreadable certificate", func(c *Config) { c.CertFile = missing }, "certFile", "cannot read the certificate"},
		{"unreadable key", func(c *Config) { c.KeyFile = missing }, "keyFile", "cannot read the key"},
		{"unreadable CA", func(c *Config) { c.ClientCAFile = missing }, "clientCAFile", "cannot read the client CA"},
		{"CA not PEM", func(c *Config) { c.ClientCAFile = c.KeyFile + ".txt"; write(t, c.ClientCAFile, []byte("hello")) }, "clientCAFile", "holds no PEM certificate"},
		{"key of another certificate", func(c *Config) {
			_, other, _ := newCA(t, "x").issue(t, "other", true)
			c.KeyFile = filepath.Join(p.dir, "other.key")
			write(t, c.KeyFile, other)
		}, "keyFile", "do not make a certificate"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			cfg := p.cfg
			tc.edit(&cfg)
			_, err := New(cfg, quietLog())
			var fe *settings.FieldError
			if !errors.As(err, &fe) || fe.Field != tc.field || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want a FieldError of %s containing %q", err, tc.field, tc.want)
			}
		})
	}
	if err := DefaultConfig().Validate(); err != nil {
		t.Errorf("the default configuration is invalid: %v", err)
	}
}

// The certificate and CA are replaced the way cert-manager and the kubelet do it (a new
// directory, then a symlink swap) while clients loop: within the reload interval the new
// certificate is served, and no request fails at any time.
func TestRotationUnderLoad(t *testing.T) {
	root := t.TempDir()
	gen := func(name string, serverCA, clientCA *testCA) int64 {
		dir := filepath.Join(root, name)
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		certPEM, keyPEM, s := serverCA.issue(t, "extender", true)
		write(t, filepath.Join(dir, "tls.crt"), certPEM)
		write(t, filepath.Join(dir, "tls.key"), keyPEM)
		write(t, filepath.Join(dir, "ca.crt"), clientCA.pem)
		return s
	}
	swap := func(name string) {
		tmp := filepath.Join(root, "..data_tmp")
		if err := os.Symlink(name, tmp); err != nil {
			t.Fatal(err)
		}
		if err := os.Rename(tmp, filepath.Join(root, "..data")); err != nil {
			t.Fatal(err)
		}
	}
	serverCA1, serverCA2 := newCA(t, "server CA 1"), newCA(t, "server CA 2")
	clientCA1, clientCA2 := newCA(t, "client CA 1"), newCA(t, "client CA 2")
	// The CA bundle of the second generation holds both client CAs, as during a CA rollover.
	bundle := &testCA{pem: append(append([]byte{}, clientCA1.pem...), clientCA2.pem...)}
	first := gen("gen1", serverCA1, clientCA1)
	second := gen("gen2", serverCA2, bundle)
	swap("gen1")
	for _, f := range []string{"tls.crt", "tls.key", "ca.crt"} {
		if err := os.Symlink(filepath.Join("..data", f), filepath.Join(root, f)); err != nil {
			t.Fatal(err)
		}
	}
	cfg := DefaultConfig()
	cfg.CertFile, cfg.KeyFile, cfg.ClientCAFile = filepath.Join(root, "tls.crt"), filepath.Join(root, "tls.key"), filepath.Join(root, "ca.crt")
	cfg.ReloadInterval = framework.Duration(200 * time.Millisecond)
	r, err := New(cfg, quietLog())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	go r.Run(ctx)
	url := serve(t, r)

	// Clients trust both server CAs; one still has a certificate of the old client CA, one of
	// the new.
	clients := []*tls.Config{clientCA1.clientTLS(t, "my-scheduler", serverCA1, serverCA2), clientCA2.clientTLS(t, "my-scheduler", serverCA1, serverCA2)}
	var mu sync.Mutex
	seen := map[int64]int{}
	var failures []error
	stop := make(chan struct{})
	var wg sync.WaitGroup
	for i := range 4 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				select {
				case <-stop:
					return
				default:
				}
				// Before the swap only the old client certificate is accepted: start with it.
				c := clients[0]
				mu.Lock()
				if seen[second] > 0 {
					c = clients[i%2]
				}
				mu.Unlock()
				s, err := get(url, c)
				mu.Lock()
				if err != nil {
					failures = append(failures, err)
				} else {
					seen[s]++
				}
				mu.Unlock()
			}
		}()
	}
	time.Sleep(300 * time.Millisecond)
	swapped := time.Now()
	swap("gen2")
	deadline := swapped.Add(cfg.ReloadInterval.D() + 2*time.Second)
	for {
		mu.Lock()
		n := seen[second]
		mu.Unlock()
		if n > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the new certificate is not served %s after the swap (reload interval %s)", time.Since(swapped), cfg.ReloadInterval)
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Logf("new certificate served %s after the swap", time.Since(swapped).Round(time.Millisecond))
	time.Sleep(300 * time.Millisecond)
	close(stop)
	wg.Wait()
	if len(failures) > 0 {
		t.Fatalf("%d requests failed during the rotation, first: %v", len(failures), failures[0])
	}
	if seen[first] == 0 || seen[second] < 10 {
		t.Fatalf("served %v, want both generations (%d then %d)", seen, first, second)
	}
	t.Logf("requests served per certificate serial: %v", seen)
	// The new client CA is in force: a certificate of client CA 2 was served after the swap.
	if _, err := get(url, clients[1]); err != nil {
		t.Fatalf("client of the new CA refused: %v", err)
	}
}

// A bad new file is reported and the previous certificate kept; a good one later is taken.
func TestBadNewFileKept(t *testing.T) {
	p := newPKI(t)
	p.cfg.ClientCAFile = ""
	r, err := New(p.cfg, quietLog())
	if err != nil {
		t.Fatal(err)
	}
	url := serve(t, r)
	client := (*testCA)(nil).clientTLS(t, "", p.serverCA)

	newCert, newKey, newSerial := p.serverCA.issue(t, "extender", true)
	write(t, p.cfg.CertFile, newCert) // the key is not written yet: a mismatched pair
	changed, err := r.Reload()
	if changed || err == nil || !strings.Contains(err.Error(), "do not make a certificate") {
		t.Fatalf("Reload with a mismatched pair: changed %v, error %v", changed, err)
	}
	if s, err := get(url, client); err != nil || s != p.serverSerial {
		t.Fatalf("after a bad reload: serial %d, error %v; want the previous %d", s, err, p.serverSerial)
	}
	write(t, p.cfg.KeyFile, []byte("garbage"))
	if _, err := r.Reload(); err == nil {
		t.Fatal("Reload accepted a garbage key")
	}
	write(t, p.cfg.KeyFile, newKey)
	if changed, err := r.Reload(); !changed || err != nil {
		t.Fatalf("Reload of a good pair: changed %v, error %v", changed, err)
	}
	if s, err := get(url, client); err != nil || s != newSerial {
		t.Fatalf("after a good reload: serial %d, error %v; want %d", s, err, newSerial)
	}
	if changed, err := r.Reload(); changed || err != nil {
		t.Fatalf("Reload without change: changed %v, error %v", changed, err)
	}
}

// The probe's client configuration: a server CA to verify with, a client pair to present.
func TestClientConfig(t *testing.T) {
	p := newPKI(t)
	r, err := New(p.cfg, quietLog())
	if err != nil {
		t.Fatal(err)
	}
	url := serve(t, r)
	dir := t.TempDir()
	certPEM, keyPEM, _ := p.clientCA.issue(t, "probe", false)
	write(t, filepath.Join(dir, "ca.crt"), p.serverCA.pem)
	write(t, filepath.Join(dir, "c.crt"), certPEM)
	write(t, filepath.Join(dir, "c.key"), keyPEM)
	c, err := ClientConfig(filepath.Join(dir, "ca.crt"), filepath.Join(dir, "c.crt"), filepath.Join(dir, "c.key"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := get(url, c); err != nil {
		t.Fatal(err)
	}
	if _, err := ClientConfig("", filepath.Join(dir, "c.crt"), ""); err == nil {
		t.Error("a certificate without its key accepted")
	}
}
