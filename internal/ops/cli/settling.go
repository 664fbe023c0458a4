package cli

import (
	"context"
	"time"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/sluicehq/sluice/internal/platform/broker"
)

// settlingJS is a JetStream whose reads, and whose idempotent pause and
// resume of durables, wait through a settling cluster (broker.Settle):
// a command run just after a node restarted then answers once the
// cluster has elected its leaders, instead of failing on the first
// request sent while nobody led. The streams and consumers it returns do
// the same. Everything else, publishing above all, passes through
// unchanged: a publish is retried, if at all, by the code that knows its
// message id.
type settlingJS struct {
	jetstream.JetStream
	cfg broker.SettleConfig
}

var (
	_ jetstream.JetStream = settlingJS{}
	_ jetstream.Stream    = settlingStream{}
	_ jetstream.Consumer  = settlingConsumer{}
)

// newSettlingJS wraps js; cfg bounds every wait.
func newSettlingJS(js jetstream.JetStream, cfg broker.SettleConfig) settlingJS {
	return settlingJS{JetStream: js, cfg: cfg}
}

// settle runs one request through broker.Settle and returns its answer.
func settle[T any](ctx context.Context, cfg broker.SettleConfig, req func(context.Context) (T, error)) (T, error) {
	var v T
	err := broker.Settle(ctx, cfg, func(ctx context.Context) error {
		var err error
		v, err = req(ctx)
		return err
	})
	return v, err
}

func (s settlingJS) AccountInfo(ctx context.Context) (*jetstream.AccountInfo, error) {
	return settle(ctx, s.cfg, s.JetStream.AccountInfo)
}

func (s settlingJS) Stream(ctx context.Context, name string) (jetstream.Stream, error) {
	st, err := settle(ctx, s.cfg, func(ctx context.Context) (jetstream.Stream, error) { return s.JetStream.Stream(ctx, name) })
	if err != nil {
		return nil, err
	}
	return settlingStream{Stream: st, cfg: s.cfg}, nil
}

func (s settlingJS) StreamNameBySubject(ctx context.Context, subject string) (string, error) {
	return settle(ctx, s.cfg, func(ctx context.Context) (string, error) { return s.JetStream.StreamNameBySubject(ctx, subject) })
}

func (s settlingJS) Consumer(ctx context.Context, stream, name string) (jetstream.Consumer, error) {
	c, err := settle(ctx, s.cfg, func(ctx context.Context) (jetstream.Consumer, error) { return s.JetStream.Consumer(ctx, stream, name) })
	if err != nil {
		return nil, err
	}
	return settlingConsumer{Consumer: c, cfg: s.cfg}, nil
}

func (s settlingJS) PauseConsumer(ctx context.Context, stream, name string, until time.Time) (*jetstream.ConsumerPauseResponse, error) {
	return settle(ctx, s.cfg, func(ctx context.Context) (*jetstream.ConsumerPauseResponse, error) {
		return s.JetStream.PauseConsumer(ctx, stream, name, until)
	})
}

func (s settlingJS) ResumeConsumer(ctx context.Context, stream, name string) (*jetstream.ConsumerPauseResponse, error) {
	return settle(ctx, s.cfg, func(ctx context.Context) (*jetstream.ConsumerPauseResponse, error) {
		return s.JetStream.ResumeConsumer(ctx, stream, name)
	})
}

// settlingStream is a stream whose reads wait through a settling cluster.
type settlingStream struct {
	jetstream.Stream
	cfg broker.SettleConfig
}

func (s settlingStream) Info(ctx context.Context, opts ...jetstream.StreamInfoOpt) (*jetstream.StreamInfo, error) {
	return settle(ctx, s.cfg, func(ctx context.Context) (*jetstream.StreamInfo, error) { return s.Stream.Info(ctx, opts...) })
}

func (s settlingStream) GetMsg(ctx context.Context, seq uint64, opts ...jetstream.GetMsgOpt) (*jetstream.RawStreamMsg, error) {
	return settle(ctx, s.cfg, func(ctx context.Context) (*jetstream.RawStreamMsg, error) { return s.Stream.GetMsg(ctx, seq, opts...) })
}

func (s settlingStream) GetLastMsgForSubject(ctx context.Context, subject string) (*jetstream.RawStreamMsg, error) {
	return settle(ctx, s.cfg, func(ctx context.Context) (*jetstream.RawStreamMsg, error) {
		return s.Stream.GetLastMsgForSubject(ctx, subject)
	})
}

func (s settlingStream) Consumer(ctx context.Context, name string) (jetstream.Consumer, error) {
	c, err := settle(ctx, s.cfg, func(ctx context.Context) (jetstream.Consumer, error) { return s.Stream.Consumer(ctx, name) })
	if err != nil {
		return nil, err
	}
	return settlingConsumer{Consumer: c, cfg: s.cfg}, nil
}

// settlingConsumer is a consumer whose Info waits through a settling
// cluster.
type settlingConsumer struct {
	jetstream.Consumer
	cfg broker.SettleConfig
}

func (c settlingConsumer) Info(ctx context.Context) (*jetstream.ConsumerInfo, error) {
	return settle(ctx, c.cfg, c.Consumer.Info)
}
