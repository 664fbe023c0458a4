package broker

import (
	"errors"
	"fmt"
	"net"
	"sync"
	"sync/atomic"
	"time"

	"github.com/nats-io/nats.go"
)

// dialer dials NATS servers for nats.go and remembers how its latest
// dial went. nats.go reports a first connection that every server
// refused as ErrNoServers alone; the dial's own error says why (nothing
// listening, no route, no such host), and whether a server that was
// reached ever sent a byte tells a silent server from a slow one.
type dialer struct {
	net  net.Dialer
	mu   sync.Mutex
	err  error
	conn *countingConn
	addr string
}

// newDialer returns a dialer whose connections time out as nats.go's
// own do.
func newDialer() *dialer {
	return &dialer{net: net.Dialer{Timeout: nats.DefaultTimeout}}
}

// Dial implements nats.CustomDialer.
func (d *dialer) Dial(network, address string) (net.Conn, error) {
	c, err := d.net.Dial(network, address)
	d.mu.Lock()
	defer d.mu.Unlock()
	d.err, d.conn, d.addr = err, nil, address
	if err != nil {
		return nil, err
	}
	d.conn = &countingConn{Conn: c}
	return d.conn, nil
}

// explain adds to err, nats.Connect's failure, what the latest dial
// learnt: the dial's error, or that the server it reached stayed silent.
func (d *dialer) explain(err error) error {
	d.mu.Lock()
	defer d.mu.Unlock()
	var ne net.Error
	switch {
	case d.err != nil && !errors.Is(err, d.err):
		return fmt.Errorf("%w: %w", err, d.err)
	case d.conn != nil && d.conn.read.Load() == 0 && errors.As(err, &ne) && ne.Timeout():
		return &SilentServerError{Addr: d.addr, Wait: d.net.Timeout, Err: err}
	}
	return err
}

// countingConn counts the bytes read from a connection.
type countingConn struct {
	net.Conn
	read atomic.Int64
}

// Read implements net.Conn.
func (c *countingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.read.Add(int64(n))
	return n, err
}

// SilentServerError is a server that accepted a connection but sent
// nothing: a NATS server greets every client at once, so something
// else listens at Addr, such as an HTTP server, or a TLS-first port.
type SilentServerError struct {
	// Addr is the host and port dialed.
	Addr string
	// Wait is how long the client waited for a greeting.
	Wait time.Duration
	// Err is the client's timeout.
	Err error
}

// Error implements error.
func (e *SilentServerError) Error() string {
	return fmt.Sprintf("the server at %s accepted the connection but sent no NATS greeting within %s: it is not a NATS client port", e.Addr, e.Wait)
}

// Unwrap returns the client's timeout.
func (e *SilentServerError) Unwrap() error { return e.Err }

// WrongServer reports true: the server is not NATS (see pkg/classify).
func (e *SilentServerError) WrongServer() bool { return true }
