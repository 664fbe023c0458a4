package netfault_test

import (
	"bufio"
	"errors"
	"net"
	"os"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/dev/netfault"
)

// echo starts a line echo server and returns its address.
func echo(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { l.Close() })
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				r := bufio.NewReader(c)
				for {
					line, err := r.ReadString('\n')
					if err != nil {
						return
					}
					if _, err := c.Write([]byte(line)); err != nil {
						return
					}
				}
			}()
		}
	}()
	return l.Addr().String()
}

// roundTrip sends one line through addr and returns how long the echo took.
func roundTrip(t *testing.T, addr string, deadline time.Duration) (time.Duration, error) {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, deadline)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	start := time.Now()
	_ = c.SetDeadline(start.Add(deadline))
	if _, err := c.Write([]byte("ping\n")); err != nil {
		return 0, err
	}
	_, err = bufio.NewReader(c).ReadString('\n')
	return time.Since(start), err
}

func TestFaults(t *testing.T) {
	t.Parallel()
	srv := netfault.New(t)
	p, err := srv.Proxy("echo", echo(t))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := roundTrip(t, p.Addr, 2*time.Second); err != nil {
		t.Fatalf("healthy proxy: %v", err)
	}
	tests := []struct {
		fault netfault.Fault
		check func(d time.Duration, err error) string
	}{
		{netfault.Latency(200*time.Millisecond, 0), func(d time.Duration, err error) string {
			if err != nil || d < 400*time.Millisecond {
				return "want a round trip of at least 400ms (200ms each way)"
			}
			return ""
		}},
		{netfault.ResetPeer(0), func(_ time.Duration, err error) string {
			if err == nil || errors.Is(err, os.ErrDeadlineExceeded) {
				return "want the connection reset"
			}
			return ""
		}},
		{netfault.Blackhole(), func(_ time.Duration, err error) string {
			if !errors.Is(err, os.ErrDeadlineExceeded) {
				return "want silence until the client's deadline"
			}
			return ""
		}},
	}
	for _, tt := range tests {
		if err := p.Inject(tt.fault); err != nil {
			t.Fatal(err)
		}
		d, err := roundTrip(t, p.Addr, time.Second)
		if msg := tt.check(d, err); msg != "" {
			t.Errorf("%s: round trip %s, %v: %s", tt.fault.Name, d, err, msg)
		}
		if err := p.Heal(); err != nil {
			t.Fatal(err)
		}
		if _, err := roundTrip(t, p.Addr, 2*time.Second); err != nil {
			t.Errorf("after healing %s: %v", tt.fault.Name, err)
		}
	}
}
