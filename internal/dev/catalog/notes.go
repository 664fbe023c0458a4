package catalog

import "github.com/sluicehq/sluice/internal/platform/config"

// notes add to a setting's usage what an operator needs beyond it, keyed
// by environment variable (or by flag, as --flag, when it has none). A
// note for a setting no binary registers fails TestNotesNameSettings.
var notes = map[string]string{
	"DATABASE_URL":             "each service connects as its own role (`sluice_producer`, `sluice_consumer`, `sluice_relay`, `sluice_replayer`; the CLI as `sluice_operator`, the console as `sluice_console`); its password is never logged (see [Security](security.md#postgresql-a-role-per-service))",
	"NATS_URL":                 "the service's own NATS user goes in it, `nats://consumer:PASSWORD@host:4222`; never logged (see [Security](security.md#nats-one-user-per-role))",
	"METRICS_ADDR":             "loopback by default; set `:PORT` to be scraped from another host (Compose does)",
	"EMBEDDING_DIMS":           "fixed when the schema is first migrated",
	"SQL_TIMEOUT":              "a transaction's `BEGIN` and `COMMIT` and connecting included: the client gives up after it, silent connection or not",
	"SLUICE_DEMO":              "without it a service refuses the shipped default passwords and ones under 12 characters in `DATABASE_URL` and `NATS_URL`, saying which setting holds one",
	"EMBEDDER_API_KEY":         "never logged",
	"CONSUMER_WORKERS":         "three keep work going while one waits out a 429",
	"SOFT_TIME_LIMIT":          "derived by default: `EMBEDDER_TIMEOUT` × 3 in-process attempts + 10 s of waiting out 429s + 6 s",
	"MAX_DELIVERIES":           "enforced by the application; JetStream's MaxDeliver is unlimited",
	"POLICY_RULES":             "the rules of `internal/content/secrets` are built in: private keys, cloud and API tokens, webhook URLs, JWTs, password assignments",
	"BACKOFF_MAX":              "a transient failure is redelivered after full jitter below `min(BACKOFF_MAX, BACKOFF_BASE·2^(delivery−1))`, never before `Retry-After`",
	"RATE_REQUESTS_PER_MINUTE": "set it alike on every consumer and replayer: each paces to its share (see [Scaling out](deployment.md#scaling-out))",
	"BUDGET_KEY":               "the API key itself is never written to NATS, only a truncated SHA-256 with the URL; set it alike where one quota is reached through several URLs or keys",
	"HALT_REJECTION_RATIO":     "see [Runbook: run halted](operations.md#runbook-run-halted)",
	"HOLD_DELAY":               "held deliveries never count against `MAX_DELIVERIES`",
	"POLICY_FILE":              "see [Per-source policy](#per-source-policy)",
	"ALERT_WEBHOOK_URL":        "retried on what `pkg/classify` calls transient (408, 425, 429, 5xx, network errors), never on another 4xx",
	"RETENTION_MANDATE":        "2555 days, about seven years",
	"PUBLISH_CONFIRM_DELAY":    "well under `OWED_GRACE`",
}

// noteKey is the key of v in notes.
func noteKey(v config.Var) string {
	if v.Env != "" {
		return v.Env
	}
	return "--" + v.Flag
}
