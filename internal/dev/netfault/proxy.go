package netfault

import (
	"errors"
	"fmt"

	toxiclient "github.com/Shopify/toxiproxy/v2/client"
)

// Proxy is one Toxiproxy proxy: clients connect to Addr instead of
// Upstream, and faults injected into the proxy land on their connections.
type Proxy struct {
	// Addr is the loopback host:port clients connect to.
	Addr string
	// Upstream is the host:port the proxy forwards to.
	Upstream string

	p *toxiclient.Proxy
}

// Inject applies f to every connection through the proxy, present and
// future, until Heal.
func (p *Proxy) Inject(f Fault) error {
	for _, stream := range f.Streams {
		name := f.Name + "_" + stream
		if _, err := p.p.AddToxic(name, f.Type, stream, 1, toxiclient.Attributes(f.Attributes)); err != nil {
			return fmt.Errorf("inject %s into %s: %w", name, p.p.Name, err)
		}
	}
	return nil
}

// Heal removes every fault from the proxy.
func (p *Proxy) Heal() error {
	toxics, err := p.p.Toxics()
	if err != nil {
		return fmt.Errorf("list faults of %s: %w", p.p.Name, err)
	}
	var errs []error
	for _, t := range toxics {
		errs = append(errs, p.p.RemoveToxic(t.Name))
	}
	return errors.Join(errs...)
}

// Disable closes every connection through the proxy and refuses new ones
// until Enable: a clean partition, where clients see errors at once.
func (p *Proxy) Disable() error { return p.p.Disable() }

// Enable accepts connections again after Disable.
func (p *Proxy) Enable() error { return p.p.Enable() }
