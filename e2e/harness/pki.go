package harness

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"time"
)

// authority is a throw-away certificate authority for one cluster.
type authority struct {
	cert    *x509.Certificate
	key     *ecdsa.PrivateKey
	certPEM []byte
}

func newAuthority() (*authority, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, err
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(1),
		Subject:               pkix.Name{CommonName: "kube-safe-scheduler e2e CA"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(7 * 24 * time.Hour),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, err
	}
	return &authority{cert: cert, key: key, certPEM: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})}, nil
}

// issue returns a certificate and its key, both PEM, for a server (ips, dnsNames) or a client
// (commonName as user name, organizations as groups).
func (a *authority) issue(commonName string, organizations []string, ips []net.IP, dnsNames []string, server bool) (certPEM, keyPEM []byte, err error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return nil, nil, err
	}
	usage := x509.ExtKeyUsageClientAuth
	if server {
		usage = x509.ExtKeyUsageServerAuth
	}
	tmpl := &x509.Certificate{
		SerialNumber: serial,
		Subject:      pkix.Name{CommonName: commonName, Organization: organizations},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(7 * 24 * time.Hour),
		KeyUsage:     x509.KeyUsageDigitalSignature,
		ExtKeyUsage:  []x509.ExtKeyUsage{usage},
		IPAddresses:  ips,
		DNSNames:     dnsNames,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, a.cert, &key.PublicKey, a.key)
	if err != nil {
		return nil, nil, err
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		return nil, nil, err
	}
	return pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), nil
}

// writeServiceAccountKey writes a new RSA key pair for service account tokens: the private key
// (PKCS#1 PEM) to keyPath, the public key (PKIX PEM) to pubPath.
func writeServiceAccountKey(keyPath, pubPath string) error {
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	pub, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return err
	}
	if err := os.WriteFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "RSA PRIVATE KEY", Bytes: x509.MarshalPKCS1PrivateKey(key)}), 0o600); err != nil {
		return err
	}
	return os.WriteFile(pubPath, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pub}), 0o644)
}

// TestCA is a certificate authority for tests that give components certificates of their own
// (an extender serving mutual TLS, the scheduler's client certificate).
type TestCA struct{ a *authority }

// NewTestCA returns a new authority or fails t.
func NewTestCA(t T) *TestCA {
	t.Helper()
	a, err := newAuthority()
	if err != nil {
		t.Fatalf("test CA: %v", err)
	}
	return &TestCA{a: a}
}

// CertPEM is the authority's certificate.
func (ca *TestCA) CertPEM() []byte { return ca.a.certPEM }

// Secret returns the data of a kubernetes.io/tls Secret as cert-manager writes it (tls.crt,
// tls.key, ca.crt): a server certificate for localhost and 127.0.0.1, or a client certificate
// named commonName.
func (ca *TestCA) Secret(t T, commonName string, server bool) map[string][]byte {
	t.Helper()
	var ips []net.IP
	var dns []string
	if server {
		ips, dns = []net.IP{net.IPv4(127, 0, 0, 1)}, []string{"localhost"}
	}
	certPEM, keyPEM, err := ca.a.issue(commonName, nil, ips, dns, server)
	if err != nil {
		t.Fatalf("issuing %s: %v", commonName, err)
	}
	return map[string][]byte{"tls.crt": certPEM, "tls.key": keyPEM, "ca.crt": ca.a.certPEM}
}
