package puback

import (
	"context"
	"strconv"
	"sync"
	"time"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// Sender publishes batches of messages to one stream and reads their
// PubAcks. It is safe for concurrent use; keep one per stream and
// process, so that it remembers when the stream was created (see verify).
type Sender struct {
	js     jetstream.JetStream
	stream string

	mu sync.Mutex
	// created is when the stream was created, as last seen; the zero
	// time until it is known.
	created time.Time
}

// NewSender returns a Sender that publishes to stream, expecting every
// message's subject to be one of stream's.
func NewSender(js jetstream.JetStream, stream string) *Sender {
	return &Sender{js: js, stream: stream}
}

// Option adjusts one Send.
type Option func(*options)

type options struct {
	pace  func(context.Context) error
	again int
}

// Paced calls wait before each publish, a rate limiter's permit for
// instance. When wait fails, that message and the rest of the batch are
// not published, their Acks carrying its error.
func Paced(wait func(context.Context) error) Option {
	return func(o *options) { o.pace = wait }
}

// RepublishGone publishes a message whose deduplicated PubAck names a
// first copy that is gone (ErrGone) again, under its Nats-Msg-Id with
// ":r<n>" appended for the nth time, at most times times. Use it when a
// second copy of a message is harmless and nothing records which
// Nats-Msg-Id was last used: the duplicate window would otherwise swallow
// every publish of the message until it passes.
func RepublishGone(times int) Option {
	return func(o *options) { o.again = times }
}

// Send publishes msgs asynchronously, waits for every PubAck, and checks
// that each deduplicated one points at a message still in the stream. It
// returns one Ack per message, in the order of msgs; a message is in the
// stream when its Ack's Err is nil. Send returns an error only when ctx
// ends before every PubAck is read: the Acks not read, and duplicates
// not verified, then carry ctx's error. msgs are not modified.
func (s *Sender) Send(ctx context.Context, msgs []*nats.Msg, opts ...Option) ([]Ack, error) {
	var o options
	for _, opt := range opts {
		opt(&o)
	}
	acks := make([]Ack, len(msgs))
	current := make([]*nats.Msg, len(msgs))
	todo := make([]int, len(msgs))
	for i, m := range msgs {
		acks[i].MsgID, current[i], todo[i] = m.Header.Get(jetstream.MsgIDHeader), m, i
	}
	for n := 1; ; n++ {
		if err := s.round(ctx, current, acks, todo, o.pace); err != nil {
			return acks, err
		}
		if n > o.again {
			return acks, nil
		}
		todo = todo[:0]
		for i, a := range acks {
			if isGone(a.Err) {
				todo = append(todo, i)
				current[i] = renamed(msgs[i], n)
				acks[i] = Ack{MsgID: current[i].Header.Get(jetstream.MsgIDHeader)}
			}
		}
		if len(todo) == 0 {
			return acks, nil
		}
	}
}

// round publishes msgs[i] for every i in todo and fills acks[i].
func (s *Sender) round(ctx context.Context, msgs []*nats.Msg, acks []Ack, todo []int, pace func(context.Context) error) error {
	created := s.knownCreated(ctx)
	futures := make([]jetstream.PubAckFuture, len(todo))
	var stop error
	for k, i := range todo {
		if stop == nil && pace != nil {
			stop = pace(ctx)
		}
		if stop != nil {
			acks[i].Err = stop
			continue
		}
		f, err := s.js.PublishMsgAsync(msgs[i], jetstream.WithExpectStream(s.stream))
		if err != nil {
			acks[i].Err = err
			continue
		}
		futures[k] = f
	}
	var dups []int
	for k, f := range futures {
		if f == nil {
			continue
		}
		i := todo[k]
		select {
		case ack := <-f.Ok():
			acks[i].Seq, acks[i].Duplicate = ack.Sequence, ack.Duplicate
			if ack.Duplicate {
				dups = append(dups, i)
			}
		case err := <-f.Err():
			acks[i].Err = err
		case <-ctx.Done():
			for _, d := range dups {
				acks[d].Err = ctx.Err()
			}
			for k2, f := range futures[k:] {
				if f != nil {
					acks[todo[k+k2]].Err = ctx.Err()
				}
			}
			return ctx.Err()
		}
	}
	s.verify(ctx, acks, dups, created)
	return nil
}

// renamed is a copy of m published under its Nats-Msg-Id with ":r<n>"
// appended.
func renamed(m *nats.Msg, n int) *nats.Msg {
	c := *m
	c.Header = make(nats.Header, len(m.Header))
	for k, v := range m.Header {
		c.Header[k] = append([]string(nil), v...)
	}
	c.Header.Set(jetstream.MsgIDHeader, m.Header.Get(jetstream.MsgIDHeader)+":r"+strconv.Itoa(n))
	return &c
}

// knownCreated is when the stream was created as this Sender last saw
// it, asking the server the first time. Without an answer it is the zero
// time, which makes verify count every duplicate as gone.
func (s *Sender) knownCreated(ctx context.Context) time.Time {
	s.mu.Lock()
	created := s.created
	s.mu.Unlock()
	if !created.IsZero() {
		return created
	}
	stream, err := s.js.Stream(ctx, s.stream)
	if err != nil {
		return time.Time{}
	}
	created = stream.CachedInfo().Created
	s.seeCreated(created)
	return created
}

func (s *Sender) seeCreated(created time.Time) {
	s.mu.Lock()
	s.created = created
	s.mu.Unlock()
}
