package tlsreload

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
)

// issueUntil is issue with a chosen NotAfter, for the expiry gauge.
func (ca *testCA) issueUntil(t *testing.T, notAfter time.Time) (certPEM, keyPEM []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(serial.Add(1)), Subject: pkix.Name{CommonName: "extender"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: notAfter,
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
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
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: kder})
}

// The expiry gauge reads the certificate served at scrape time: after a rotation it reports the
// new certificate's NotAfter.
func TestExpiryCollector(t *testing.T) {
	p := newPKI(t)
	p.cfg.ClientCAFile = ""
	first := time.Now().Add(90 * 24 * time.Hour).Truncate(time.Second)
	c, k := p.serverCA.issueUntil(t, first)
	write(t, p.cfg.CertFile, c)
	write(t, p.cfg.KeyFile, k)
	r, err := New(p.cfg, quietLog())
	if err != nil {
		t.Fatal(err)
	}
	reg := prometheus.NewRegistry()
	reg.MustRegister(r.Collector())
	if got := gauge(t, reg); got != float64(first.Unix()) {
		t.Fatalf("%s = %v, want %d", ExpiryMetricName, got, first.Unix())
	}

	second := time.Now().Add(3 * 24 * time.Hour).Truncate(time.Second)
	c, k = p.serverCA.issueUntil(t, second)
	write(t, p.cfg.CertFile, c)
	write(t, p.cfg.KeyFile, k)
	if changed, err := r.Reload(); !changed || err != nil {
		t.Fatalf("Reload: changed %v, error %v", changed, err)
	}
	if got := gauge(t, reg); got != float64(second.Unix()) {
		t.Fatalf("after the rotation %s = %v, want %d", ExpiryMetricName, got, second.Unix())
	}
}

// gauge gathers reg, which must hold the expiry gauge alone, and returns its value.
func gauge(t *testing.T, reg *prometheus.Registry) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	if len(mfs) != 1 || mfs[0].GetName() != ExpiryMetricName || len(mfs[0].GetMetric()) != 1 {
		t.Fatalf("the registry holds %v, want %s alone", mfs, ExpiryMetricName)
	}
	return mfs[0].GetMetric()[0].GetGauge().GetValue()
}
