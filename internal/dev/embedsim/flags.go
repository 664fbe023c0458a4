package embedsim

import (
	"flag"
	"time"

	"github.com/sluicehq/sluice/internal/provider/tokens"
)

// ServiceConfig are the settings of the embed-sim command, as its command line sets
// them. embed-sim reads flags only, no environment.
type ServiceConfig struct {
	// Addr is the listen address. Defaults to 127.0.0.1:8089.
	Addr string
	// LogLevel is debug, info, warn or error. Defaults to info.
	LogLevel string
	// RequestLog is a file every request is appended to as a JSON line.
	// Defaults to none.
	RequestLog string
	// FaultsFile is a JSON file of scripted faults, which explicitly given
	// fault flags override. Defaults to none.
	FaultsFile string
	// Latency is the added latency, unparsed (see ParseLatency). Defaults
	// to none.
	Latency string
	// NoDrill leaves out the drill's script (Faults.WithDrill). Defaults
	// to false: the drill's markers are answered as scripted.
	NoDrill bool
	// Config holds the server settings: Dims, Model, DisableBase64, Seed,
	// the token limits, Quota and Batch. Its Faults are left alone; see
	// Faults.
	Config Config
	// Faults holds the fault rates, the outage window and the other
	// scalar faults. Latency is not among them until parsed.
	Faults Faults
}

// Register registers embed-sim's flags on fs, with their defaults.
func (f *ServiceConfig) Register(fs *flag.FlagSet) {
	fs.StringVar(&f.Addr, "addr", "127.0.0.1:8089", "listen address")
	fs.IntVar(&f.Config.Dims, "dims", 384, "dimension when a request does not ask for one")
	fs.StringVar(&f.Config.Model, "model", "embed-sim-1", "model name reported by /v1/models")
	fs.BoolVar(&f.Config.DisableBase64, "no-base64", false, "reject encoding_format=base64 like a float-only provider")
	fs.BoolVar(&f.Config.RefuseDims, "no-dimensions", false, "reject the dimensions parameter like a model that cannot shorten its vectors")
	fs.Uint64Var(&f.Config.Seed, "seed", 0, "seed for random faults and latency")
	fs.StringVar(&f.FaultsFile, "faults", "", "JSON file of scripted faults")
	fs.Float64Var(&f.Faults.Rate429, "rate-429", 0, "probability of a 429 per request")
	fs.Float64Var(&f.Faults.Rate5xx, "rate-5xx", 0, "probability of a 500/502/503 per request")
	fs.Float64Var(&f.Faults.RateHang, "rate-hang", 0, "probability of a hang per request")
	fs.Float64Var(&f.Faults.RateReset, "rate-reset", 0, "probability of a connection reset per request")
	fs.DurationVar(&f.Faults.HangFor, "hang-for", 30*time.Second, "how long a hang lasts")
	fs.IntVar(&f.Faults.RetryAfterSeconds, "retry-after", 1, "Retry-After seconds sent with 429s (negative: none)")
	fs.DurationVar(&f.Faults.OutageStart, "outage-start", 0, "outage start, relative to server start")
	fs.DurationVar(&f.Faults.OutageDuration, "outage-duration", 0, "outage length (0: no outage)")
	fs.IntVar(&f.Config.MaxInputTokens, "max-input-tokens", tokens.DefaultMaxInputTokens, "context length: reject an input of more tokens, by the model's tokenizer, with context_length_exceeded (negative: no limit)")
	fs.IntVar(&f.Config.MaxRequestTokens, "max-request-tokens", tokens.DefaultMaxRequestTokens, "reject a request whose inputs hold more tokens together with max_tokens_per_request (negative: no limit)")
	fs.IntVar(&f.Config.Quota.RequestsPerMinute, "quota-rpm", 0, "organisation quota shared by all clients: requests per minute, answered 429 with Retry-After beyond it (0: unlimited)")
	fs.IntVar(&f.Config.Quota.TokensPerMinute, "quota-tpm", 0, "organisation quota shared by all clients: input tokens per minute, by the model's tokenizer (0: unlimited)")
	fs.IntVar(&f.Faults.MaxInputChars, "max-input-chars", 0, "reject longer inputs with context_length_exceeded (0: no limit)")
	fs.StringVar(&f.Latency, "latency", "", `added latency: "fixed:5ms", "uniform:1ms-20ms" or "lognormal:10ms,200ms"`)
	fs.StringVar(&f.RequestLog, "request-log", "", "append every request as JSON lines to this file")
	fs.StringVar(&f.LogLevel, "log-level", "info", "log level: debug, info, warn, error")
	fs.BoolVar(&f.NoDrill, "no-drill", false, "do not answer the inputs of sluice-dev drill with its scripted faults")
	f.registerBatch(fs)
}

// registerBatch registers the flags of the Batch and Files APIs.
func (f *ServiceConfig) registerBatch(fs *flag.FlagSet) {
	b := &f.Config.Batch
	fs.DurationVar(&b.Validating, "batch-validating", DefaultBatchValidating, "how long a batch stays validating")
	fs.DurationVar(&b.InProgress, "batch-in-progress", DefaultBatchInProgress, "how long a batch takes to run all its requests, which complete evenly over it")
	fs.DurationVar(&b.Finalizing, "batch-finalizing", DefaultBatchFinalizing, "how long a batch stays finalizing")
	fs.DurationVar(&b.Cancelling, "batch-cancelling", DefaultBatchCancelling, "how long a cancelled batch stays cancelling")
	fs.DurationVar(&b.Window, "batch-window", 24*time.Hour, "completion window: a batch not finalizing by then expires (requests still say 24h)")
	fs.IntVar(&b.MaxRequests, "batch-max-requests", DefaultMaxBatchRequests, "most requests per batch input file; more fails the batch with too_many_tasks")
	fs.IntVar(&b.MaxInputs, "batch-max-inputs", DefaultMaxBatchInputs, "most embedding inputs per batch, across its requests; more fails the batch with too_many_tasks")
	fs.Int64Var(&b.MaxFileBytes, "batch-max-file-bytes", DefaultMaxBatchFileBytes, "largest batch input file; larger fails the batch with file_too_large")
	fs.IntVar(&b.EnqueuedTokens, "batch-enqueued-tokens", 0, "enqueued-token quota of batches, apart from the live quota: a batch beyond it fails with token_limit_exceeded (0: unlimited)")
	fs.StringVar(&b.OutputOrder, "batch-output-order", OrderInput, "order of lines in output and error files: input, reverse or shuffle")
	fs.Float64Var(&b.Faults.FailRate, "batch-fail-rate", 0, "probability that a batch fails at validating with server_error")
	fs.Float64Var(&b.Faults.ExpireRate, "batch-expire-rate", 0, "probability that a batch runs at half the pace its window allows, and expires half done")
	fs.Float64Var(&b.Faults.LoseRate, "batch-lose-rate", 0, "probability that a batch is lost once validated: not found (404) from then on")
	fs.Float64Var(&b.Faults.RefuseCreateRate, "batch-refuse-create-rate", 0, "probability that a batch create is refused (400) though its input file is there: nothing is created")
	fs.DurationVar(&b.Faults.SlowFinalize, "batch-slow-finalize", 0, "added to every batch's finalizing phase")
}
