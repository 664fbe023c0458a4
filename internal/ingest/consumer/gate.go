package consumer

import (
	"context"
	"sync"
)

// gate is open unless closed; wait blocks while it is closed. The zero
// value is open.
type gate struct {
	mu     sync.Mutex
	closed chan struct{} // non-nil while closed; closed when reopened
}

func (g *gate) close() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed == nil {
		g.closed = make(chan struct{})
	}
}

func (g *gate) open() {
	g.mu.Lock()
	defer g.mu.Unlock()
	if g.closed != nil {
		close(g.closed)
		g.closed = nil
	}
}

func (g *gate) wait(ctx context.Context) error {
	g.mu.Lock()
	ch := g.closed
	g.mu.Unlock()
	if ch == nil {
		return nil
	}
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}
