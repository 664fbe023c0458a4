package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/rs/zerolog"

	"github.com/sluicehq/sluice/internal/embedsim"
)

// errUsage marks a command-line mistake, which exits with status 2.
var errUsage = errors.New("usage")

func exitCode(err error) int {
	if errors.Is(err, errUsage) || errors.Is(err, flag.ErrHelp) {
		return 2
	}
	return 1
}

type settings struct {
	addr       string
	logLevel   string
	requestLog string
	faultsFile string
	cfg        embedsim.Config
}

// parseFlags reads the command line. Flags given explicitly override the
// same settings from --faults.
func parseFlags(args []string, stderr io.Writer) (settings, error) {
	var (
		s       settings
		f       embedsim.Faults
		latency string
	)
	fs := flag.NewFlagSet("embed-sim", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fs.StringVar(&s.addr, "addr", "127.0.0.1:8089", "listen address")
	fs.IntVar(&s.cfg.Dims, "dims", 384, "dimension when a request does not ask for one")
	fs.StringVar(&s.cfg.Model, "model", "embed-sim-1", "model name reported by /v1/models")
	fs.BoolVar(&s.cfg.DisableBase64, "no-base64", false, "reject encoding_format=base64 like a float-only provider")
	fs.Uint64Var(&s.cfg.Seed, "seed", 0, "seed for random faults and latency")
	fs.StringVar(&s.faultsFile, "faults", "", "JSON file of scripted faults")
	fs.Float64Var(&f.Rate429, "rate-429", 0, "probability of a 429 per request")
	fs.Float64Var(&f.Rate5xx, "rate-5xx", 0, "probability of a 500/502/503 per request")
	fs.Float64Var(&f.RateHang, "rate-hang", 0, "probability of a hang per request")
	fs.Float64Var(&f.RateReset, "rate-reset", 0, "probability of a connection reset per request")
	fs.DurationVar(&f.HangFor, "hang-for", 30*time.Second, "how long a hang lasts")
	fs.IntVar(&f.RetryAfterSeconds, "retry-after", 1, "Retry-After seconds sent with 429s (negative: none)")
	fs.DurationVar(&f.OutageStart, "outage-start", 0, "outage start, relative to server start")
	fs.DurationVar(&f.OutageDuration, "outage-duration", 0, "outage length (0: no outage)")
	fs.IntVar(&f.MaxInputChars, "max-input-chars", 0, "reject longer inputs with context_length_exceeded (0: no limit)")
	fs.StringVar(&latency, "latency", "", `added latency: "fixed:5ms", "uniform:1ms-20ms" or "lognormal:10ms,200ms"`)
	fs.StringVar(&s.requestLog, "request-log", "", "append every request as JSON lines to this file")
	fs.StringVar(&s.logLevel, "log-level", "info", "log level: debug, info, warn, error")
	if err := fs.Parse(args); err != nil {
		return s, err
	}
	if fs.NArg() > 0 {
		return s, fmt.Errorf("%w: unexpected arguments %q", errUsage, fs.Args())
	}
	if s.cfg.Dims < 1 {
		return s, fmt.Errorf("%w: --dims must be at least 1", errUsage)
	}
	var err error
	if f.Latency, err = embedsim.ParseLatency(latency); err != nil {
		return s, fmt.Errorf("%w: --latency: %w", errUsage, err)
	}
	s.cfg.Faults = f
	if s.faultsFile != "" {
		file, err := embedsim.LoadFaults(s.faultsFile)
		if err != nil {
			return s, err
		}
		s.cfg.Faults = overrideFaults(file, f, fs)
	}
	if err := s.cfg.Validate(); err != nil {
		return s, fmt.Errorf("%w: %w", errUsage, err)
	}
	return s, nil
}

// overrideFaults applies the fault flags that were set explicitly on top of
// the faults file.
func overrideFaults(file, flags embedsim.Faults, fs *flag.FlagSet) embedsim.Faults {
	fs.Visit(func(fl *flag.Flag) {
		switch fl.Name {
		case "rate-429":
			file.Rate429 = flags.Rate429
		case "rate-5xx":
			file.Rate5xx = flags.Rate5xx
		case "rate-hang":
			file.RateHang = flags.RateHang
		case "rate-reset":
			file.RateReset = flags.RateReset
		case "hang-for":
			file.HangFor = flags.HangFor
		case "retry-after":
			file.RetryAfterSeconds = flags.RetryAfterSeconds
		case "outage-start":
			file.OutageStart = flags.OutageStart
		case "outage-duration":
			file.OutageDuration = flags.OutageDuration
		case "max-input-chars":
			file.MaxInputChars = flags.MaxInputChars
		case "latency":
			file.Latency = flags.Latency
		}
	})
	return file
}

// run serves until ctx ends, then shuts down gracefully.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	s, err := parseFlags(args, stderr)
	if err != nil {
		return err
	}
	level, err := zerolog.ParseLevel(s.logLevel)
	if err != nil {
		return fmt.Errorf("%w: --log-level: %w", errUsage, err)
	}
	logger := zerolog.New(stderr).Level(level).With().Timestamp().Str("service", "embed-sim").Logger()

	opts := []embedsim.Option{embedsim.WithLogger(logger)}
	if s.requestLog != "" {
		f, err := os.OpenFile(s.requestLog, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
		if err != nil {
			return fmt.Errorf("open request log: %w", err)
		}
		defer f.Close()
		opts = append(opts, embedsim.WithRequestLog(f))
	}
	srv, err := embedsim.New(s.cfg, opts...)
	if err != nil {
		return err
	}
	if err := srv.Start(s.addr); err != nil {
		return err
	}
	f := s.cfg.Faults
	logger.Info().
		Str("url", srv.URL()).Int("dims", srv.Dims()).Str("model", srv.Model()).
		Float64("rate_429", f.Rate429).Float64("rate_5xx", f.Rate5xx).
		Float64("rate_hang", f.RateHang).Float64("rate_reset", f.RateReset).
		Int("sequences", len(f.Sequences)).Int("poison", len(f.Poison)).
		Dur("outage_start", f.OutageStart).Dur("outage_duration", f.OutageDuration).
		Str("latency", f.Latency.String()).
		Msg("listening")
	fmt.Fprintln(stdout, srv.URL())

	<-ctx.Done()
	logger.Info().Msg("shutting down")
	if err := srv.Close(); err != nil {
		return fmt.Errorf("shutdown: %w", err)
	}
	c := srv.Counts()
	logger.Info().Int("requests", c.Requests).Int("inputs", c.Inputs).Int("repeated_inputs", c.RepeatedInputs).Msg("stopped")
	return nil
}
