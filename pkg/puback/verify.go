package puback

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
)

// verify sets ErrGone on the acks, at the indexes dups, whose first copy
// is no longer in the stream. In a work queue a message leaves the
// stream when a consumer acknowledges it, or when it is lost; in a
// limits stream when it ages out or is deleted. Either way the publish
// put nothing in the stream.
//
// It reads the stream's state, never a message. JetStream never gives a
// sequence twice in one stream's life, so the first copy is present when
// its sequence lies between the stream's first and last and is not among
// the deleted ones. A stream created since created, the time the stream
// was seen created before the publishes, numbers other messages with the
// same sequences: then every duplicate counts as gone.
func (s *Sender) verify(ctx context.Context, acks []Ack, dups []int, created time.Time) {
	if len(dups) == 0 {
		return
	}
	fail := func(err error) {
		for _, i := range dups {
			acks[i].Err = err
		}
	}
	stream, err := s.js.Stream(ctx, s.stream)
	if err != nil {
		fail(fmt.Errorf("verify deduplicated publishes: %w", err))
		return
	}
	info := stream.CachedInfo()
	s.seeCreated(info.Created)
	state := info.State
	inRange := func(seq uint64) bool {
		return info.Created.Equal(created) && seq >= state.FirstSeq && seq <= state.LastSeq
	}
	var deleted map[uint64]bool
	for _, i := range dups {
		if inRange(acks[i].Seq) && state.NumDeleted > 0 {
			if deleted, err = deletedSeqs(ctx, stream); err != nil {
				fail(fmt.Errorf("verify deduplicated publishes: %w", err))
				return
			}
			break
		}
	}
	for _, i := range dups {
		if seq := acks[i].Seq; !inRange(seq) || deleted[seq] {
			acks[i].Err = fmt.Errorf("%s, first published at sequence %d: %w", acks[i].MsgID, seq, ErrGone)
		}
	}
}

// deletedSeqs returns the sequences deleted between stream's first and
// last: acknowledged out of order, deleted, or lost.
func deletedSeqs(ctx context.Context, stream jetstream.Stream) (map[uint64]bool, error) {
	info, err := stream.Info(ctx, jetstream.WithDeletedDetails(true))
	if err != nil {
		return nil, err
	}
	deleted := make(map[uint64]bool, len(info.State.Deleted))
	for _, seq := range info.State.Deleted {
		deleted[seq] = true
	}
	return deleted, nil
}

func isGone(err error) bool { return errors.Is(err, ErrGone) }
