package localenv

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
	"time"
)

// TLSFiles are the PEM files one side of a TLS connection holds: a client
// that verifies its server and presents a certificate of its own, or the
// server.
type TLSFiles struct {
	// CA is the certificate authority that signed the server's and the
	// client's certificates.
	CA string
	// Cert and Key are this side's certificate and private key.
	Cert, Key string
}

// WriteTLSFiles generates a throwaway CA, a server certificate for
// 127.0.0.1 and localhost and a client certificate, writes them under dir,
// readable by this process's user only, and returns the client's files and
// the server's.
func WriteTLSFiles(dir string) (client, server *TLSFiles, err error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, nil, err
	}
	ca := &x509.Certificate{
		Subject:               pkix.Name{CommonName: "sluice test CA"},
		IsCA:                  true,
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
	}
	caKey, caDER, err := issue(ca, nil, nil)
	if err != nil {
		return nil, nil, err
	}
	if ca, err = x509.ParseCertificate(caDER); err != nil {
		return nil, nil, err
	}
	serverTpl := &x509.Certificate{
		Subject:     pkix.Name{CommonName: "localhost"},
		DNSNames:    []string{"localhost"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
	}
	clientTpl := &x509.Certificate{
		Subject:     pkix.Name{CommonName: "sluice"},
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageClientAuth},
	}
	files := map[string][]byte{"ca.pem": pemBlock("CERTIFICATE", caDER)}
	for name, tpl := range map[string]*x509.Certificate{"server": serverTpl, "client": clientTpl} {
		key, der, err := issue(tpl, ca, caKey)
		if err != nil {
			return nil, nil, err
		}
		keyDER, err := x509.MarshalECPrivateKey(key)
		if err != nil {
			return nil, nil, err
		}
		files[name+".pem"] = pemBlock("CERTIFICATE", der)
		files[name+"-key.pem"] = pemBlock("EC PRIVATE KEY", keyDER)
	}
	for name, data := range files {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o600); err != nil {
			return nil, nil, err
		}
	}
	path := func(name string) string { return filepath.Join(dir, name) }
	return &TLSFiles{CA: path("ca.pem"), Cert: path("client.pem"), Key: path("client-key.pem")},
		&TLSFiles{CA: path("ca.pem"), Cert: path("server.pem"), Key: path("server-key.pem")}, nil
}

// issue creates a key and a certificate for tpl, signed by parent's key,
// or self-signed when parent is nil. Certificates are valid for a day.
func issue(tpl, parent *x509.Certificate, parentKey *ecdsa.PrivateKey) (*ecdsa.PrivateKey, []byte, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 62))
	if err != nil {
		return nil, nil, err
	}
	tpl.SerialNumber = serial
	tpl.NotBefore = time.Now().Add(-time.Hour)
	tpl.NotAfter = time.Now().Add(24 * time.Hour)
	if parent == nil {
		parent, parentKey = tpl, key
	}
	der, err := x509.CreateCertificate(rand.Reader, tpl, parent, &key.PublicKey, parentKey)
	return key, der, err
}

func pemBlock(kind string, der []byte) []byte {
	return pem.EncodeToMemory(&pem.Block{Type: kind, Bytes: der})
}
