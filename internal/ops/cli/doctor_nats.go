package cli

import (
	"context"
	"errors"
	"io/fs"
	"strings"

	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/sluicehq/sluice/internal/platform/broker"
	"github.com/sluicehq/sluice/internal/platform/config"
)

// The names of doctor's NATS checks.
const (
	natsCheck      = "nats"
	jetStreamCheck = "jetstream"
)

// streamDurables are the streams and the durables on each that `sluice
// nats setup` declares (broker.Ensure).
var streamDurables = []struct {
	stream   string
	durables []string
}{
	{broker.IngestStream, []string{broker.WorkersConsumer, broker.ReplayConsumer, broker.BackfillConsumer}},
	{broker.DLQStream, []string{broker.TriageConsumer, broker.ReplayerConsumer, broker.AlerterConsumer}},
}

func streamCheckName(stream string) string { return "stream " + stream }

// checkNATS connects with NATS_URL and NATS_CREDS and checks JetStream
// and the topology; when it cannot connect, every other check of NATS is
// skipped.
func checkNATS(ctx context.Context, o doctorOptions) []check {
	var connErr error
	if err := o.ValidateNATS(); err != nil {
		connErr = err
	}
	var out []check
	if connErr == nil {
		nc, js, err := broker.Connect(broker.ConnConfigOf(o.Common, "sluice doctor"), zerolog.Nop())
		if err == nil {
			defer nc.Close()
			out = append(out, okCheck(natsCheck, "connected to %s as %s (nats-server %s)", nc.ConnectedUrlRedacted(), orAnonymous(config.UserOf(o.NATSURL)), nc.ConnectedServerVersion()))
			return append(out, checkJetStream(ctx, o, js)...)
		}
		connErr = o.Fault("sluice", err, true)
	}
	setting, value := "NATS_URL", config.Redact(o.NATSURL)
	if se, ok := errors.AsType[*config.SettingError](connErr); ok {
		setting = se.Setting
	} else if o.NATSCreds != "" && (errors.Is(connErr, fs.ErrNotExist) || errors.Is(connErr, fs.ErrPermission)) {
		setting, value = "NATS_CREDS", o.NATSCreds
	}
	out = append(out, settingCheck(natsCheck, setting, value, connErr))
	for _, name := range natsCheckNames() {
		out = append(out, skipped(name, "NATS unreachable"))
	}
	return out
}

func natsCheckNames() []string {
	names := []string{jetStreamCheck}
	for _, s := range streamDurables {
		names = append(names, streamCheckName(s.stream))
	}
	return names
}

func orAnonymous(user string) string {
	if user == "" {
		return "no user"
	}
	return user
}

// checkJetStream checks that the server runs JetStream, then each
// stream and its durables.
func checkJetStream(ctx context.Context, o doctorOptions, js jetstream.JetStream) []check {
	c := bounded(ctx, o, func(ctx context.Context) check {
		info, err := js.AccountInfo(ctx)
		switch {
		case errors.Is(err, jetstream.ErrJetStreamNotEnabled), errors.Is(err, jetstream.ErrJetStreamNotEnabledForAccount):
			return failCheck(jetStreamCheck, "NATS_URL", "the server at NATS_URL runs without JetStream for this account: start nats-server with -js (jetstream {} in its configuration), or point NATS_URL at one that has it")
		case err != nil:
			return failCheck(jetStreamCheck, "NATS_URL", "ask JetStream for the account's information: %v; the NATS user may lack $JS.API.INFO: connect as the CLI's own user", err)
		}
		return okCheck(jetStreamCheck, "enabled: %d streams, %d consumers in the account", info.Streams, info.Consumers)
	})
	out := []check{c}
	for _, s := range streamDurables {
		if c.Status != checkOK {
			out = append(out, skipped(streamCheckName(s.stream), "JetStream unavailable"))
			continue
		}
		out = append(out, bounded(ctx, o, func(ctx context.Context) check { return checkStream(ctx, js, s.stream, s.durables) }))
	}
	return out
}

// checkStream checks that stream exists with every one of its durables.
func checkStream(ctx context.Context, js jetstream.JetStream, stream string, durables []string) check {
	name := streamCheckName(stream)
	s, err := broker.Stream(ctx, js, stream)
	if errors.Is(err, broker.ErrTopologyMissing) {
		return failCheck(name, "", "missing: run sluice nats setup with the topology owner's NATS user, once per deployment")
	}
	if err != nil {
		return failCheck(name, "NATS_URL", "%v: the NATS user may lack permission to read it (connect as the CLI's own user)", err)
	}
	var missing []string
	for _, d := range durables {
		_, err := s.Consumer(ctx, d)
		if errors.Is(err, jetstream.ErrConsumerNotFound) {
			missing = append(missing, d)
		} else if err != nil {
			return failCheck(name, "NATS_URL", "look up durable %s: %v", d, err)
		}
	}
	if len(missing) > 0 {
		return failCheck(name, "", "durables %s missing: run sluice nats setup with the topology owner's NATS user", strings.Join(missing, ", "))
	}
	return okCheck(name, "%d messages; durables %s", s.CachedInfo().State.Msgs, strings.Join(durables, ", "))
}
