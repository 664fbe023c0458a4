package systemtest

import (
	"context"
	"maps"
	"strings"
	"testing"
	"time"

	"github.com/sluicehq/sluice/internal/dev/embedsim"
	"github.com/sluicehq/sluice/internal/dev/testenv"
	"github.com/sluicehq/sluice/internal/ingest/pipeline"
	"github.com/sluicehq/sluice/internal/platform/broker"
	"github.com/sluicehq/sluice/internal/platform/natsauth"
	"github.com/sluicehq/sluice/migrations"
)

// The operator CLI reaches a NATS that requires credentials and TLS with
// client certificates, through the same settings as the services
// (NATS_URL's credentials, NATS_TLS_CA, NATS_TLS_CERT, NATS_TLS_KEY):
// reconcile --redrive rebuilds a lost stream's work and dlq replay
// --execute dispatches replays. Every service runs as its own role over
// TLS, and the CLI uses PostgreSQL as sluice_operator.
func TestCLIOverTLSWithCredentials(t *testing.T) {
	t.Parallel()
	s := newSystem(t, testenv.DefaultBackend,
		embedsim.Config{Faults: embedsim.Faults{Poison: []embedsim.PoisonRule{{Match: "fixable", Kind: embedsim.PoisonInvalidInput}}}},
		pipeline.Config{}, testenv.WithTLS())
	if s.nats.TLS == nil {
		t.Fatal("testenv.WithTLS gave a server without TLS")
	}
	corpus := docs("plain", 4)
	maps.Copy(corpus, docs("fixable", 3))
	s.produce("tls", corpus)

	// Broker loss before any consumer ran: the owner declares INGEST again
	// and the operator's reconcile republishes the owed work into it.
	if err := s.js.DeleteStream(context.Background(), broker.IngestStream); err != nil {
		t.Fatal(err)
	}
	if code, out, errOut := s.sluiceAs(natsauth.Owner, "nats", "setup", "--ack-wait", "30s"); code != 0 {
		t.Fatalf("nats setup over TLS: code %d\n%s%s", code, out, errOut)
	}
	code, out, errOut := s.sluice("reconcile", "--redrive")
	if code != 0 || !strings.Contains(out, "redriven") {
		t.Fatalf("reconcile --redrive over TLS: code %d\n%s%s", code, out, errOut)
	}
	s.startAll(noBreaker)
	s.eventually(30*time.Second, "plain chunks stored and fixable ones quarantined", func() bool {
		return s.count(`SELECT count(*) FROM chunk_embeddings`) == 4 &&
			s.count(`SELECT count(*) FROM dead_letters WHERE error_class = 'bad_request'`) == 3
	})

	if err := s.sim.SetFaults(embedsim.Faults{}); err != nil {
		t.Fatal(err)
	}
	code, out, errOut = s.sluice("dlq", "replay", "--error-class", "bad_request", "--execute", "--reason", "provider fixed")
	if code != 0 || !strings.Contains(out, "dispatched 3") {
		t.Fatalf("dlq replay --execute over TLS: code %d\n%s%s", code, out, errOut)
	}
	s.eventually(30*time.Second, "replayed chunks stored", func() bool {
		return s.count(`SELECT count(*) FROM chunk_embeddings`) == 7
	})
	if code, out, errOut := s.sluice("reconcile"); code != 0 {
		t.Fatalf("reconcile after convergence: code %d\n%s%s", code, out, errOut)
	}
}

// Without its client certificate, or without credentials, the CLI gets
// nowhere: the server requires both.
func TestCLIRefusedWithoutCertificateOrCredentials(t *testing.T) {
	t.Parallel()
	s := newSystem(t, testenv.DefaultBackend, embedsim.Config{}, pipeline.Config{}, testenv.WithTLS())
	base := map[string]string{"DATABASE_URL": s.db.RoleURL(migrations.OperatorRole)}
	for name, env := range map[string]map[string]string{
		"no client certificate": {"NATS_URL": s.nats.URLFor(natsauth.Operator), "NATS_TLS_CA": s.nats.TLS.CA},
		"no credentials": {"NATS_URL": natsauth.URLWithUser(s.nats.URL, string(natsauth.Operator), "wrong"),
			"NATS_TLS_CA": s.nats.TLS.CA, "NATS_TLS_CERT": s.nats.TLS.Cert, "NATS_TLS_KEY": s.nats.TLS.Key},
	} {
		maps.Copy(env, base)
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		code, out, errOut := s.sluiceWith(ctx, env, "dlq", "pause", "--reason", "credentials check")
		cancel()
		if code == 0 {
			t.Errorf("%s: dlq pause succeeded\n%s%s", name, out, errOut)
		}
	}
}
