package netfault

import (
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	toxiproxy "github.com/Shopify/toxiproxy/v2"
	toxiclient "github.com/Shopify/toxiproxy/v2/client"
	"github.com/rs/zerolog"
)

// Server is a Toxiproxy server running in this process, its HTTP API on a
// loopback port.
type Server struct {
	api    *toxiproxy.ApiServer
	client *toxiclient.Client
	served chan error
}

// readyTimeout bounds the wait for the API to answer after Start.
const readyTimeout = 10 * time.Second

// Start starts a Toxiproxy server on a free loopback port and waits until
// its API answers.
func Start() (*Server, error) {
	addr, err := freeAddr()
	if err != nil {
		return nil, err
	}
	s := &Server{
		api:    toxiproxy.NewServer(toxiproxy.NewMetricsContainer(nil), zerolog.Nop()),
		client: toxiclient.NewClient("http://" + addr),
		served: make(chan error, 1),
	}
	go func() { s.served <- s.api.Listen(addr) }()
	deadline := time.Now().Add(readyTimeout)
	for {
		_, err := s.client.Version()
		if err == nil {
			return s, nil
		}
		select {
		case serr := <-s.served:
			return nil, fmt.Errorf("toxiproxy on %s: %w", addr, errors.Join(serr, err))
		default:
		}
		if time.Now().After(deadline) {
			_ = s.api.Shutdown()
			return nil, fmt.Errorf("toxiproxy on %s not ready after %s: %w", addr, readyTimeout, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// New is Start for a test: it fails t if the server cannot start, and
// stops it when the test ends.
func New(t testing.TB) *Server {
	t.Helper()
	s, err := Start()
	if err != nil {
		t.Fatalf("netfault: %v", err)
	}
	t.Cleanup(func() {
		if err := s.Close(); err != nil {
			t.Errorf("netfault: close: %v", err)
		}
	})
	return s
}

// Close removes every proxy, closing their connections, and stops the API.
func (s *Server) Close() error {
	return errors.Join(s.client.ResetState(), s.api.Collection.Clear(), s.api.Shutdown())
}

// Proxy starts a proxy named name on a free loopback port that forwards
// to upstream, a host:port.
func (s *Server) Proxy(name, upstream string) (*Proxy, error) {
	listen, err := freeAddr()
	if err != nil {
		return nil, err
	}
	p, err := s.client.CreateProxy(name, listen, upstream)
	if err != nil {
		return nil, fmt.Errorf("create proxy %s to %s: %w", name, upstream, err)
	}
	return &Proxy{Addr: listen, Upstream: upstream, p: p}, nil
}

func freeAddr() (string, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", fmt.Errorf("find a free port: %w", err)
	}
	defer l.Close()
	return l.Addr().String(), nil
}
