package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"

	"github.com/rs/zerolog"

	"github.com/sluicehq/sluice/internal/dev/embedsim"
	"github.com/sluicehq/sluice/internal/provider/tokens"
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
		s  settings
		fl embedsim.ServiceConfig
	)
	fs := flag.NewFlagSet("embed-sim", flag.ContinueOnError)
	fs.SetOutput(stderr)
	fl.Register(fs)
	if err := fs.Parse(args); err != nil {
		return s, err
	}
	s.addr, s.logLevel, s.requestLog, s.faultsFile, s.cfg = fl.Addr, fl.LogLevel, fl.RequestLog, fl.FaultsFile, fl.Config
	f, latency := fl.Faults, fl.Latency
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
	if !fl.NoDrill {
		s.cfg.Faults = s.cfg.Faults.WithDrill()
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
		Int("max_input_tokens", s.cfg.MaxInputTokens).Int("max_request_tokens", s.cfg.MaxRequestTokens).
		Int("quota_rpm", s.cfg.Quota.RequestsPerMinute).Int("quota_tpm", s.cfg.Quota.TokensPerMinute).
		Msg("listening")
	tokens.Select(srv.Model(), logger)
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
