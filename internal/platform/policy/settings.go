package policy

import (
	"errors"
	"fmt"
	"time"
)

// Settings is the policy that applies to one source, every value
// concrete.
type Settings struct {
	// MaxDeliveries is the delivery cap: a transient failure on this
	// delivery parks the chunk as transient_exhausted.
	MaxDeliveries int
	// AmbiguousRetries is how many times an unrecognised error is retried
	// before the chunk is parked as ambiguous_exhausted.
	AmbiguousRetries int
	// MaxReplays is how many replay generations a chunk gets before it is
	// quarantined as replay_exhausted.
	MaxReplays int
	// BackoffBase is the ceiling of the first retry delay; BackoffMax the
	// ceiling of any.
	BackoffBase, BackoffMax time.Duration
	// BreakerFailures is how many consecutive transient failures open the
	// embedder's circuit breaker; BreakerDelay how long it stays open.
	// Embedder-wide: only the default section may set them.
	BreakerFailures int
	BreakerDelay    time.Duration
	// SoftTimeLimit bounds the embed stage of the source's chunks in one
	// batch.
	SoftTimeLimit time.Duration
	// RequestsPerMinute and TokensPerMinute are the embedder's rate
	// budget; 0 is unlimited. Embedder-wide: only the default section may
	// set them.
	RequestsPerMinute, TokensPerMinute int
	// BudgetShare is the most of the rate budget the source's requests
	// may spend, as a fraction: a bulk backfill at 0.2 leaves at least
	// 0.8 of the budget to every other source, in every process of the
	// fleet. 1, the default, caps nothing.
	BudgetShare float64
	// Mode is how the source's chunks are embedded: ModeLive through the
	// live endpoint, or ModeBatch through the provider's Batch API (bulk
	// mode: half the price, outside the live rate limits, answered
	// within hours).
	Mode string
	// BatchAttempts is how many provider batches a chunk of a ModeBatch
	// source may go through before it is embedded live: a batch that
	// fails, expires, is lost or is cancelled hands its unfinished chunks
	// back, and they go to a new batch while attempts remain. 1 sends
	// them live at once.
	BatchAttempts int
	// HaltRejectionRatio halts a run once the share of its settled chunks
	// that were parked exceeds it, after HaltMinChunks have settled; 0
	// never halts.
	HaltRejectionRatio float64
	HaltMinChunks      int
	// PayloadRetention is how long a dead letter's payload is kept after
	// its last failure (with the parked chunk's job bytes, which are the
	// same bytes); EscalationRetention the same for escalations, which
	// the retention mandate protects, and also how long an escalation's
	// history and its chunk's secret text (escalated_chunks) are kept.
	PayloadRetention, EscalationRetention time.Duration
	// HistoryRetention is how long each event in a dead letter's history
	// (dead_letter_history) is kept; an escalation's follow
	// EscalationRetention. No flag carries it: it defaults to
	// DefaultHistoryRetention.
	HistoryRetention time.Duration
	// SecretsAllow names the compliance rules whose findings the source's
	// chunks may hold (for example password_assignment for documentation
	// that shows example passwords): a chunk they alone match is embedded,
	// and counted as allowed. Any other rule still escalates. Empty, the
	// default, allows nothing. The names are checked against the rules
	// when the consumer starts.
	SecretsAllow []string
}

// Defaults of the settings that no service flag carries. The others
// default to their services' Default constants.
const (
	// DefaultRetentionMandate is the legal floor for keeping compliance
	// records: seven years (2555 days), the common public-records mandate.
	// Escalations are never purged sooner unless the file lowers it.
	DefaultRetentionMandate = 2555 * 24 * time.Hour
	// DefaultEscalationRetention is the escalations' retention: the
	// mandate itself.
	DefaultEscalationRetention = DefaultRetentionMandate
	// DefaultPayloadRetention is how long a dead letter's payload is
	// kept: a quarter, long enough to see a pattern and replay, and equal
	// to the DLQ stream's default MaxAge (broker.DefaultDLQMaxAge).
	DefaultPayloadRetention = 90 * 24 * time.Hour
	// DefaultHistoryRetention is how long a dead letter's history is
	// kept: a year of trends and replay outcomes. It holds no chunk text,
	// so it may outlive the payloads.
	DefaultHistoryRetention = 365 * 24 * time.Hour
	// DefaultBudgetShare caps no source's share of the rate budget.
	DefaultBudgetShare = 1.0
	// DefaultBatchAttempts gives a chunk one more batch after a batch
	// that went wrong, then the live endpoint.
	DefaultBatchAttempts = 2
	// DefaultHaltMinChunks is how many chunks of a run must settle before
	// its rejection ratio is judged.
	DefaultHaltMinChunks = 100
)

// Modes of Settings.Mode.
const (
	// ModeLive embeds through the live endpoint, in the consumer's batch.
	ModeLive = "live"
	// ModeBatch embeds through the provider's Batch API.
	ModeBatch = "batch"
)

// Validate says what is wrong with s and how to fix it; mandate is the
// retention floor for escalations.
func (s Settings) Validate(mandate time.Duration) error {
	var errs []error
	if s.MaxDeliveries < 1 {
		errs = append(errs, fmt.Errorf("max_deliveries %d: use at least 1", s.MaxDeliveries))
	}
	if s.AmbiguousRetries < 0 || s.AmbiguousRetries >= s.MaxDeliveries {
		errs = append(errs, fmt.Errorf("ambiguous_retries %d: use 0..%d (below max_deliveries)", s.AmbiguousRetries, max(s.MaxDeliveries-1, 0)))
	}
	if s.MaxReplays < 0 {
		errs = append(errs, fmt.Errorf("max_replays %d: use 0 or more", s.MaxReplays))
	}
	if s.BackoffBase <= 0 || s.BackoffMax < s.BackoffBase {
		errs = append(errs, fmt.Errorf("backoff base %s, max %s: use a positive base and a max at least as long", s.BackoffBase, s.BackoffMax))
	}
	if s.BreakerFailures < 1 || s.BreakerDelay <= 0 {
		errs = append(errs, fmt.Errorf("breaker failures %d, delay %s: use at least 1 failure and a positive delay", s.BreakerFailures, s.BreakerDelay))
	}
	if s.SoftTimeLimit <= 0 {
		errs = append(errs, fmt.Errorf("soft_time_limit %s: use a positive duration", s.SoftTimeLimit))
	}
	if s.RequestsPerMinute < 0 || s.TokensPerMinute < 0 {
		errs = append(errs, fmt.Errorf("rate requests_per_minute %d, tokens_per_minute %d: use 0 (unlimited) or more", s.RequestsPerMinute, s.TokensPerMinute))
	}
	if !(s.BudgetShare > 0 && s.BudgetShare <= 1) {
		errs = append(errs, fmt.Errorf("budget_share %g: use a fraction above 0 and at most 1, e.g. 0.2 for a backfill that leaves 80%% of the budget to the other sources", s.BudgetShare))
	}
	if s.Mode != ModeLive && s.Mode != ModeBatch {
		errs = append(errs, fmt.Errorf("mode %q: use %q (the live endpoint) or %q (the provider's Batch API)", s.Mode, ModeLive, ModeBatch))
	}
	if s.BatchAttempts < 1 {
		errs = append(errs, fmt.Errorf("batch_attempts %d: use at least 1 (1 sends what a batch hands back to the live endpoint at once)", s.BatchAttempts))
	}
	if !(s.HaltRejectionRatio >= 0 && s.HaltRejectionRatio < 1) {
		errs = append(errs, fmt.Errorf("halt rejection_ratio %g: use 0 (never halt) up to below 1, e.g. 0.4", s.HaltRejectionRatio))
	}
	if s.HaltMinChunks < 1 {
		errs = append(errs, fmt.Errorf("halt min_chunks %d: use at least 1", s.HaltMinChunks))
	}
	if s.PayloadRetention <= 0 {
		errs = append(errs, fmt.Errorf("retention dead_letter_payloads %s: use a positive duration such as 90d", s.PayloadRetention))
	}
	if s.HistoryRetention <= 0 {
		errs = append(errs, fmt.Errorf("retention dead_letter_history %s: use a positive duration such as 365d", s.HistoryRetention))
	}
	if s.EscalationRetention < mandate {
		errs = append(errs, fmt.Errorf("retention escalations %s is below the retention mandate %s: raise it, or lower retention_mandate if the law that binds you allows", days(s.EscalationRetention), days(mandate)))
	}
	return errors.Join(errs...)
}

// withUnflagged fills the settings no service flag carries with their
// defaults, where the caller left them zero.
func (s Settings) withUnflagged() Settings {
	if s.HistoryRetention == 0 {
		s.HistoryRetention = DefaultHistoryRetention
	}
	if s.BudgetShare == 0 {
		s.BudgetShare = DefaultBudgetShare
	}
	if s.Mode == "" {
		s.Mode = ModeLive
	}
	if s.BatchAttempts == 0 {
		s.BatchAttempts = DefaultBatchAttempts
	}
	return s
}

// days renders a duration in whole days when it is one, as the file
// writes them.
func days(d time.Duration) string {
	if d > 0 && d%(24*time.Hour) == 0 {
		return fmt.Sprintf("%dd", d/(24*time.Hour))
	}
	return d.String()
}
