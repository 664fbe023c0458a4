package fleetbudget

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/rs/zerolog"

	"github.com/sluicehq/sluice/internal/platform/broker"
	"github.com/sluicehq/sluice/internal/platform/wait"
	"github.com/sluicehq/sluice/internal/provider/embedder"
)

// Deps are a member's collaborators.
type Deps struct {
	// JS reaches the bucket.
	JS jetstream.JetStream
	// Budget is the process's budget, paced to the member's share.
	Budget *embedder.Budget
	// Log hears when the member loses and regains the fleet.
	Log zerolog.Logger
	// Registry receives the member's metrics; nil for none.
	Registry prometheus.Registerer
	// Now is the clock. Defaults to time.Now.
	Now func() time.Time
}

// Member is one process's place in a fleet budget: its heartbeats keep
// its entry alive and set its budget's share. Run it for as long as the
// process calls the provider.
type Member struct {
	cfg     Config
	deps    Deps
	id      string
	metrics *metrics

	kv        jetstream.KeyValue
	lastKnown int
	// allocated is the allocation of the previous heartbeat, negative
	// before the first (see Pace).
	allocated float64
	prev      embedder.Stats
	prevAt    time.Time
	lost      bool
}

// New returns a member of the budget cfg.Key.
func New(cfg Config, deps Deps) (*Member, error) {
	cfg.applyDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	if deps.Now == nil {
		deps.Now = time.Now
	}
	id := make([]byte, 8)
	_, _ = rand.Read(id)
	return &Member{cfg: cfg, deps: deps, id: hex.EncodeToString(id), metrics: newMetrics(deps.Registry, deps.Budget),
		lastKnown: 1, allocated: -1, prevAt: deps.Now()}, nil
}

// ID is the member's id, unique per process.
func (m *Member) ID() string { return m.id }

// Join takes the member's first share: until it returns, the process
// would pace to the whole budget, so a service calls it before its first
// request and fails to start if the bucket cannot be reached. A missing
// bucket is broker.ErrTopologyMissing.
func (m *Member) Join(ctx context.Context) error {
	kv, err := m.deps.JS.KeyValue(ctx, broker.BudgetBucket)
	if errors.Is(err, jetstream.ErrBucketNotFound) {
		return fmt.Errorf("fleet budget bucket %s: %w", broker.BudgetBucket, broker.ErrTopologyMissing)
	}
	if err != nil {
		return fmt.Errorf("fleet budget bucket %s: %w", broker.BudgetBucket, err)
	}
	m.kv = kv
	if _, err := m.heartbeat(ctx); err != nil {
		return fmt.Errorf("join the fleet budget: %w", err)
	}
	return nil
}

// Run heartbeats until ctx ends. Join must have succeeded. It leaves the
// entry in place: the process may still spend its share (in-flight
// batches during a graceful stop), so it calls Leave once it has
// stopped calling the provider, or lets the entry expire.
func (m *Member) Run(ctx context.Context) {
	for wait.Sleep(ctx, m.cfg.Heartbeat, nil) {
		share, err := m.heartbeat(ctx)
		switch {
		case err != nil && ctx.Err() == nil:
			m.metrics.failures.Inc()
			m.metrics.coordinated.Set(0)
			m.deps.Budget.SetShare(share)
			if !m.lost {
				m.lost = true
				m.deps.Log.Warn().Err(err).Int("last_known_members", m.lastKnown).Float64("share", share).
					Msg("fleet budget unreachable: pacing to the budget divided by the members last seen, or the current share if lower")
			}
		case err == nil && m.lost:
			m.lost = false
			m.deps.Log.Info().Int("members", m.lastKnown).Float64("share", share).Msg("fleet budget reachable again")
		}
	}
}

// Leave deletes the member's entry so that its share returns to the
// others at once. Call it after Run has returned and the process has
// stopped calling the provider. Join must have succeeded.
func (m *Member) Leave(ctx context.Context) error {
	if err := m.kv.Delete(ctx, m.entryName()); err != nil {
		return fmt.Errorf("leave the fleet budget: %w", err)
	}
	return nil
}

func (m *Member) entryName() string { return m.cfg.Key + "." + m.id }

// heartbeat reads the fleet, computes the allocation with this member's
// fresh claim, paces to its part and writes its entry. On failure it
// returns the fallback share, which the caller applies.
func (m *Member) heartbeat(ctx context.Context) (float64, error) {
	ctx, cancel := context.WithTimeout(ctx, m.cfg.Heartbeat)
	defer cancel()
	self := m.entry()
	fleet, err := read(ctx, m.deps.JS, m.kv, m.cfg.Key)
	if err != nil {
		return Fallback(m.deps.Budget.Share(), m.lastKnown), err
	}
	entries, at := fleet[m.cfg.Key], -1
	for i, e := range entries {
		if e.Member == m.id {
			at = i
		}
	}
	if at < 0 {
		entries, at = append(entries, self), len(entries)
	}
	entries[at] = self
	claims := make([]Claim, len(entries))
	for i, e := range entries {
		claims[i] = e.Claim
	}
	alloc := Allocate(claims)[at]
	self.Share, self.Members = Pace(alloc, m.allocated, len(entries)), len(entries)
	value, err := json.Marshal(self)
	if err != nil {
		return Fallback(m.deps.Budget.Share(), m.lastKnown), err
	}
	if _, err := m.kv.Put(ctx, m.entryName(), value); err != nil {
		return Fallback(m.deps.Budget.Share(), m.lastKnown), fmt.Errorf("heartbeat: %w", err)
	}
	m.lastKnown, m.allocated = len(entries), alloc
	m.deps.Budget.SetShare(self.Share)
	m.metrics.members.Set(float64(len(entries)))
	m.metrics.coordinated.Set(1)
	return self.Share, nil
}

// entry is the member's record now: what it spent and waited since the
// previous heartbeat.
func (m *Member) entry() Entry {
	now, stats := m.deps.Now(), m.deps.Budget.Stats()
	requests, tokens := m.deps.Budget.Allowances()
	configuredRequests, configuredTokens := m.deps.Budget.Configured()
	e := Entry{Key: m.cfg.Key, Member: m.id, Service: m.cfg.Service,
		RequestsPerMinute: configuredRequests, TokensPerMinute: configuredTokens,
		PacedRequestsPerMinute: requests, PacedTokensPerMinute: tokens}
	if elapsed := now.Sub(m.prevAt).Minutes(); elapsed > 0 {
		e.Claim = claim(stats, m.prev, elapsed, requests, tokens, m.cfg.HungryWait)
	}
	m.prev, m.prevAt = stats, now
	return e
}

// claim is what a member did over minutes, from its budget's stats then
// and before, against the whole budget a minute.
func claim(now, before embedder.Stats, minutes, requests, tokens, hungryWait float64) Claim {
	var c Claim
	if requests > 0 {
		c.Used = float64(now.Requests-before.Requests) / minutes / requests
	}
	if tokens > 0 {
		c.Used = max(c.Used, float64(now.Tokens-before.Tokens)/minutes/tokens)
	}
	// Waits booked since the last heartbeat, or requests still queued
	// for their turn: a member whose every request waits makes no new
	// booking while its turns are far off, and is hungry all the same.
	c.Hungry = (now.Waited-before.Waited).Minutes() >= hungryWait*minutes || now.Queued.Minutes() >= hungryWait*minutes
	return c
}
