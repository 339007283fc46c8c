package redistest

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"
)

// TLSServer is a server that also listens for TLS, with a certificate for
// 127.0.0.1 signed by a throw-away CA.
type TLSServer struct {
	*Server        // its plain port stays open for the test's own checks
	TLSAddr string // "127.0.0.1:port" of the TLS listener
	CAFile  string // PEM of the CA that signed the server's certificate
}

// StartTLS starts a server with a TLS port (clients are not asked for
// certificates). redis-server must be built with TLS, as Debian's is.
func StartTLS(t testing.TB) *TLSServer {
	t.Helper()
	dir := t.TempDir()
	caFile, certFile, keyFile := writeCerts(t, dir)
	tlsPort, err := freePort()
	if err != nil {
		t.Fatalf("redistest: %v", err)
	}
	s := startWith(t, 1, func(_ int, s *Server) {
		s.extra = []string{"--tls-port", strconv.Itoa(tlsPort), "--tls-cert-file", certFile,
			"--tls-key-file", keyFile, "--tls-ca-cert-file", caFile, "--tls-auth-clients", "no"}
	})[0]
	return &TLSServer{Server: s, TLSAddr: "127.0.0.1:" + strconv.Itoa(tlsPort), CAFile: caFile}
}

// writeCerts writes a CA and a server certificate for 127.0.0.1 signed by
// it, valid for a day.
func writeCerts(t testing.TB, dir string) (caFile, certFile, keyFile string) {
	t.Helper()
	fail := func(err error) {
		if err != nil {
			t.Fatalf("redistest: certificates: %v", err)
		}
	}
	caKey, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	fail(err)
	ca := &x509.Certificate{
		SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "redistest CA"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}
	caDER, err := x509.CreateCertificate(rand.Reader, ca, ca, &caKey.PublicKey, caKey)
	fail(err)
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	fail(err)
	leaf := &x509.Certificate{
		SerialNumber: big.NewInt(2), Subject: pkix.Name{CommonName: "127.0.0.1"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(24 * time.Hour),
		IPAddresses: []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:    x509.KeyUsageDigitalSignature,
		// ClientAuth too: cluster nodes present it to each other on the TLS bus.
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth, x509.ExtKeyUsageClientAuth},
	}
	leafDER, err := x509.CreateCertificate(rand.Reader, leaf, ca, &key.PublicKey, caKey)
	fail(err)
	keyDER, err := x509.MarshalECPrivateKey(key)
	fail(err)
	caFile, certFile, keyFile = filepath.Join(dir, "ca.pem"), filepath.Join(dir, "cert.pem"), filepath.Join(dir, "key.pem")
	fail(os.WriteFile(caFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: caDER}), 0o600))
	fail(os.WriteFile(certFile, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: leafDER}), 0o600))
	fail(os.WriteFile(keyFile, pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}), 0o600))
	return caFile, certFile, keyFile
}
