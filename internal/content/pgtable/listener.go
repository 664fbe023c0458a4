package pgtable

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/jackc/pgx/v5"
)

// Listener waits for the triggers' notifications of one source on a
// connection of its own, reconnecting after the connection is lost.
// Notifications are only a wake-up: what changed is in the queue, so one
// lost while the connection was down costs a drain's delay, not a change.
type Listener struct {
	dsn    string
	source string
	conn   *pgx.Conn
}

// NewListener returns a listener of source's notifications on the
// database dsn connects to; it connects on its first Wait.
func NewListener(dsn, source string) *Listener { return &Listener{dsn: dsn, source: source} }

// Listen connects and listens, unless the listener is listening
// already. A caller listens before it drains: a change committed after
// the drain read the queue is then notified to the next Wait, where one
// committed between a drain and a later LISTEN would wait for the poll.
func (l *Listener) Listen(ctx context.Context) error {
	if l.conn != nil {
		return nil
	}
	conn, err := pgx.Connect(ctx, l.dsn)
	if err != nil {
		return fmt.Errorf("table source %s: listen: %w", l.source, err)
	}
	if _, err := conn.Exec(ctx, "LISTEN "+Channel); err != nil {
		_ = conn.Close(context.WithoutCancel(ctx))
		return fmt.Errorf("table source %s: listen: %w", l.source, err)
	}
	l.conn = conn
	return nil
}

// Wait returns when a change of the source is notified, or after
// timeout; a notification that arrived since Listen returns at once. It
// returns an error when it could not connect or lost its connection; the
// next Listen connects again, and the caller drains anyway, since changes
// made meanwhile were not notified to it.
func (l *Listener) Wait(ctx context.Context, timeout time.Duration) error {
	if err := l.Listen(ctx); err != nil {
		return err
	}
	deadline, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	for {
		n, err := l.conn.WaitForNotification(deadline)
		switch {
		case err == nil && n.Payload == l.source:
			return nil
		case err == nil:
			continue
		case ctx.Err() != nil:
			return ctx.Err()
		case errors.Is(err, context.DeadlineExceeded) && deadline.Err() != nil && !l.conn.IsClosed():
			return nil
		}
		l.Close()
		return fmt.Errorf("table source %s: listen: %w", l.source, err)
	}
}

// Close closes the listener's connection.
func (l *Listener) Close() {
	if l.conn != nil {
		_ = l.conn.Close(context.Background())
		l.conn = nil
	}
}
