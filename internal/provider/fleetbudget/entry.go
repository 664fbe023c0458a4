package fleetbudget

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/nats-io/nats.go/jetstream"

	"github.com/sluicehq/sluice/internal/platform/broker"
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
	// member was configured with; 0 is unlimited. Members that share a
	// key must agree on them.
	RequestsPerMinute float64 `json:"requests_per_minute"`
	TokensPerMinute   float64 `json:"tokens_per_minute"`
	// PacedRequestsPerMinute and PacedTokensPerMinute are the whole
	// budget the member paces to: the configured one, or the provider's
	// when lower and once its answers have said so. Members may differ
	// on them until each has heard from the provider.
	PacedRequestsPerMinute float64 `json:"paced_requests_per_minute"`
	PacedTokensPerMinute   float64 `json:"paced_tokens_per_minute"`
	// Claim is what the member did since its previous heartbeat.
	Claim
	// Share is the fraction of the budget the member paces to, and
	// Members how many members it counted, itself included.
	Share   float64 `json:"share"`
	Members int     `json:"members"`
}

// Fleet is every live entry of the bucket, by budget key, each key's
// entries ordered by member.
type Fleet map[string][]Entry

// Summary is one budget key's members, as reconcile reports them.
type Summary struct {
	Key string `json:"key"`
	// Members counts the live members; Services names them by service.
	Members  int            `json:"members"`
	Services map[string]int `json:"services"`
	// Shares is the sum of the members' shares: at most 1.
	Shares float64 `json:"shares"`
	// RequestsPerMinute and TokensPerMinute are the configured budget,
	// when the members agree on it.
	RequestsPerMinute float64 `json:"requests_per_minute"`
	TokensPerMinute   float64 `json:"tokens_per_minute"`
}

// Summaries sums up every budget key's members, by key.
func (f Fleet) Summaries() []Summary {
	out := make([]Summary, 0, len(f))
	for key, entries := range f {
		s := Summary{Key: key, Members: len(entries), Services: map[string]int{}}
		for _, e := range entries {
			s.Services[e.Service]++
			s.Shares += e.Share
			s.RequestsPerMinute, s.TokensPerMinute = e.RequestsPerMinute, e.TokensPerMinute
		}
		out = append(out, s)
	}
	sort.Slice(out, func(a, b int) bool { return out[a].Key < out[b].Key })
	return out
}

// Problems says, per budget key, what breaks invariant 12: members whose
// shares add up to more than the budget, or members configured with
// different budgets (each then paces to its own idea of it). The budgets
// members pace to are not compared: a member adopts the provider's lower
// limit only once an answer of the provider has told it, so an idle one
// may not have yet.
func (f Fleet) Problems() []string {
	var out []string
	for _, s := range f.Summaries() {
		if s.Shares > 1+shareSlack {
			out = append(out, fmt.Sprintf("budget %s: %d members' shares add up to %.3f of the budget", s.Key, s.Members, s.Shares))
		}
		for _, e := range f[s.Key] {
			if e.RequestsPerMinute != s.RequestsPerMinute || e.TokensPerMinute != s.TokensPerMinute {
				out = append(out, fmt.Sprintf("budget %s: members disagree on the budget (%g and %g requests, %g and %g tokens a minute): set RATE_REQUESTS_PER_MINUTE and RATE_TOKENS_PER_MINUTE alike on every process that shares BUDGET_KEY",
					s.Key, e.RequestsPerMinute, s.RequestsPerMinute, e.TokensPerMinute, s.TokensPerMinute))
				break
			}
		}
	}
	return out
}

// shareSlack is the rounding Problems forgives.
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
