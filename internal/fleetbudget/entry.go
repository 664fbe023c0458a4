package fleetbudget

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/sluicehq/sluice/internal/broker"
)

// Entry is one member's record in the bucket, as of its last heartbeat.
type Entry struct {
	// Key is the budget key the member draws on; Member its id, unique
	// per process.
	Key    string `json:"key"`
	Member string `json:"member"`
	// Service is the member's service, e.g. consumer or dlq-replayer.
	Service string `json:"service"`
	// RequestsPerMinute and TokensPerMinute are the whole budget the
	// member knows; 0 is unlimited.
	RequestsPerMinute float64 `json:"requests_per_minute"`
	TokensPerMinute   float64 `json:"tokens_per_minute"`
	// Claim is what the member did since its previous heartbeat.
	Claim
	// Share is the fraction of the budget the member paces to, and
	// Members how many members it counted, itself included.
	Share   float64 `json:"share"`
	Members int     `json:"members"`
}

// name is the entry's key in the bucket.
func (e Entry) name() string { return e.Key + "." + e.Member }

// Fleet is every live entry of the bucket, by budget key, each key's
// entries ordered by member.
type Fleet map[string][]Entry

// Overdrawn lists the budget keys whose members' shares add up to more
// than the whole budget (beyond rounding): invariant 12's check.
func (f Fleet) Overdrawn() []string {
	var out []string
	for key, entries := range f {
		sum := 0.0
		for _, e := range entries {
			sum += e.Share
		}
		if sum > 1+shareSlack {
			out = append(out, key)
		}
	}
	sort.Strings(out)
	return out
}

// shareSlack is the rounding Overdrawn forgives.
const shareSlack = 1e-6

// Read returns the bucket's live entries whose key starts with prefix
// (empty for every budget). It reads the stream's subjects and gets each
// entry directly, so it needs no consumer; an entry deleted or expired
// meanwhile is skipped. A missing bucket is broker.ErrTopologyMissing.
func Read(ctx context.Context, js jetstream.JetStream, prefix string) (Fleet, error) {
	kv, err := js.KeyValue(ctx, broker.BudgetBucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		return nil, fmt.Errorf("bucket %s: %w", broker.BudgetBucket, broker.ErrTopologyMissing)
	}
	if err != nil {
		return nil, fmt.Errorf("look up bucket %s: %w", broker.BudgetBucket, err)
	}
	return read(ctx, js, kv, prefix)
}

func read(ctx context.Context, js jetstream.JetStream, kv jetstream.KeyValue, prefix string) (Fleet, error) {
	stream, err := js.Stream(ctx, broker.BudgetStream)
	if err != nil {
		return nil, fmt.Errorf("look up stream %s: %w", broker.BudgetStream, err)
	}
	subjects := strings.TrimSuffix(broker.BudgetSubjects, ">")
	filter := subjects + ">"
	if prefix != "" {
		filter = subjects + prefix + ".>"
	}
	info, err := stream.Info(ctx, jetstream.WithSubjectFilter(filter))
	if err != nil {
		return nil, fmt.Errorf("read %s's members: %w", broker.BudgetBucket, err)
	}
	fleet := Fleet{}
	for subject := range info.State.Subjects {
		kve, err := kv.Get(ctx, strings.TrimPrefix(subject, subjects))
		if errors.Is(err, jetstream.ErrKeyNotFound) || errors.Is(err, jetstream.ErrKeyDeleted) {
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("get %s: %w", subject, err)
		}
		var e Entry
		if err := json.Unmarshal(kve.Value(), &e); err != nil || e.Key == "" || e.Member == "" {
			continue // not a member's entry: nothing to count
		}
		fleet[e.Key] = append(fleet[e.Key], e)
	}
	for _, entries := range fleet {
		sort.Slice(entries, func(a, b int) bool { return entries[a].Member < entries[b].Member })
	}
	return fleet, nil
}
