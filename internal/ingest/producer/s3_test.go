package producer_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/sluicehq/sluice/internal/content/s3source"
	"github.com/sluicehq/sluice/internal/dev/testenv"
	"github.com/sluicehq/sluice/internal/platform/crashpoint"
	"github.com/sluicehq/sluice/internal/store/sources"
	"github.com/sluicehq/sluice/pkg/messages"
)

// s3Bundle is an interruptBundle with an S3 gateway holding the bucket
// corpus, and a client of it.
type s3Bundle struct {
	*interruptBundle
	gw     *testenv.S3Gateway
	client *s3.Client
}

func newS3Bundle(t *testing.T) *s3Bundle { return newS3BundleWith(t, false) }

// newS3BundleWith is newS3Bundle, with the gateway publishing its event
// notifications to the bundle's NATS on s3.events.corpus when events is
// set.
func newS3BundleWith(t *testing.T, events bool) *s3Bundle {
	t.Helper()
	ib := newInterruptBundle(t)
	var opts []testenv.S3Option
	if events {
		opts = append(opts, testenv.WithS3Events(ib.nats.URL, "s3.events.corpus"))
	}
	b := &s3Bundle{interruptBundle: ib, gw: testenv.NewS3Gateway(t, opts...)}
	b.gw.Bucket(t, "corpus")
	var err error
	b.client, err = s3source.NewClient(context.Background(), s3source.ClientConfig{Endpoint: b.gw.Endpoint, Region: testenv.S3Region, SecretFile: b.secretFile()})
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// secretFile writes the gateway's keys as --s3-secret-file reads them.
func (b *s3Bundle) secretFile() string {
	path := filepath.Join(b.dir, "s3-secret")
	if err := os.WriteFile(path, []byte(testenv.S3AccessKey+"\n"+testenv.S3SecretKey+"\n"), 0o600); err != nil {
		b.t.Fatal(err)
	}
	return path
}

func (b *s3Bundle) put(key, body string) {
	b.t.Helper()
	if _, err := b.client.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String("corpus"), Key: aws.String(key), Body: strings.NewReader(body)}); err != nil {
		b.t.Fatalf("put %s: %v", key, err)
	}
}

// putVersions puts docs/d0.txt to d<n-1>.txt at version v.
func (b *s3Bundle) putVersions(n int, v string) {
	b.t.Helper()
	for i := range n {
		b.put(fmt.Sprintf("docs/d%d.txt", i), fmt.Sprintf("document %d, %s version", i, v))
	}
}

func (b *s3Bundle) remove(key string) {
	b.t.Helper()
	if _, err := b.client.DeleteObject(context.Background(), &s3.DeleteObjectInput{Bucket: aws.String("corpus"), Key: aws.String(key)}); err != nil {
		b.t.Fatalf("delete %s: %v", key, err)
	}
}

// run runs a producer over s3://corpus/docs/ with --sync, its
// credentials in the environment, and returns whether it succeeded and
// its log.
func (b *s3Bundle) run(args []string, env ...string) (bool, string) {
	b.t.Helper()
	args, env = b.s3Args(args, env...)
	p := b.startProducerWith(args, env...)
	err := p.Wait()
	log, _ := os.ReadFile(p.LogPath())
	return err == nil, string(log)
}

// s3Args are a producer's arguments over s3://corpus/docs/, with args,
// and its environment: the credentials, with env.
func (b *s3Bundle) s3Args(args []string, env ...string) ([]string, []string) {
	args = append([]string{"--source", "docs", "--s3", "s3://corpus/docs/", "--s3-endpoint", b.gw.Endpoint, "--sync", "--json"}, args...)
	env = append([]string{"AWS_ACCESS_KEY_ID=" + testenv.S3AccessKey, "AWS_SECRET_ACCESS_KEY=" + testenv.S3SecretKey, "AWS_REGION=" + testenv.S3Region,
		"AWS_CONFIG_FILE=/dev/null", "AWS_SHARED_CREDENTIALS_FILE=/dev/null"}, env...)
	return args, env
}

// gets counts the objects fetched so far, from the gateway's access log.
func (b *s3Bundle) gets() int { return b.gw.Requests(b.t, "s3_GetObject") }

// storedText is the text stored for the object key of source docs.
func (b *s3Bundle) storedText(key string) string {
	var text string
	_ = b.db.Pool.QueryRow(context.Background(), `SELECT string_agg(text, '' ORDER BY chunk_index) FROM chunk_embeddings WHERE doc_id = $1`,
		messages.DocID("docs", key)).Scan(&text)
	return text
}

// An S3 source's run fetches only the new and changed objects, counted
// by the gateway's access log: a second run over an unchanged bucket
// fetches nothing and deletes nothing; after a change, an addition and
// a delete, the run fetches the two, embeds them, and erases the
// deleted object's document with the erasure check clean.
func TestS3SourceFetchesOnlyChangedObjects(t *testing.T) {
	t.Parallel()
	b := newS3Bundle(t)
	b.startServices()
	b.putVersions(5, "first")
	b.put("other/outside.txt", "not under the prefix")
	if ok, log := b.run(nil); !ok {
		t.Fatalf("first run failed:\n%s", log)
	}
	if n := b.gets(); n != 5 {
		t.Fatalf("the first run fetched %d objects, want the 5 under the prefix", n)
	}
	b.eventually(60*time.Second, "every object's chunk stored", func() bool { return b.count(`SELECT count(*) FROM chunk_embeddings`) == 5 })

	ok, log := b.run(nil)
	if !ok || b.gets() != 5 || b.deleted() != 0 || !strings.Contains(log, `"documents_unchanged":5`) {
		t.Fatalf("a run over the unchanged bucket: ok %v, %d fetches in all, %d deleted; want 5 fetches and nothing deleted:\n%s", ok, b.gets(), b.deleted(), log)
	}

	b.put("docs/d1.txt", "document 1, second version")
	b.put("docs/d5.txt", "document 5, new")
	b.remove("docs/d4.txt")
	if ok, log := b.run(nil); !ok {
		t.Fatalf("third run failed:\n%s", log)
	}
	if n := b.gets(); n != 7 {
		t.Errorf("after a change and an addition, %d fetches in all, want 7: the two objects alone", n)
	}
	if n := b.deleted(); n != 1 {
		t.Fatalf("%d documents deleted, want d4's", n)
	}
	b.eventually(60*time.Second, "the changed and the new object stored", func() bool {
		return b.storedText("docs/d1.txt") == "document 1, second version" && b.storedText("docs/d5.txt") == "document 5, new"
	})
	if s := b.storedText("docs/d4.txt"); s != "" {
		t.Errorf("the deleted object's document is still searchable: %q", s)
	}
	b.noLeaks()
	if n := b.count(`SELECT count(*) FROM object_ledger`); n != 5 {
		t.Errorf("the ledger holds %d objects, want the 5 under the prefix", n)
	}
}

// A producer killed -9 mid-listing deletes nothing, though its --sync
// would delete an object gone; the next run fetches only what the
// killed one did not record, and deletes it then. Killed mid-fetch,
// after a batch is recorded and before it is published, it deletes
// nothing either; the next run fetches none of that batch again, and
// the batch is still embedded.
func TestS3SourceKilledMidSyncDeletesNothingAndResumes(t *testing.T) {
	t.Parallel()
	b := newS3Bundle(t)
	b.startServices()
	b.putVersions(6, "first")
	paged := []string{"--s3-page-size", "2", "--batch-docs", "2"}
	if ok, log := b.run(paged); !ok {
		t.Fatalf("first run failed:\n%s", log)
	}
	b.putVersions(4, "second")
	b.remove("docs/d5.txt")
	before := b.gets()
	if ok, _ := b.run(paged, crashpoint.EnvVar+"="+s3source.CrashBeforeNextPage); ok {
		t.Fatal("the producer did not die at its crash point")
	}
	if n := b.gets() - before; n != 2 {
		t.Fatalf("the killed run fetched %d objects, want the first page's 2", n)
	}
	if n := b.deleted(); n != 0 {
		t.Fatalf("a run killed mid-listing deleted %d documents", n)
	}
	if ok, log := b.run(paged); !ok {
		t.Fatalf("the run after the kill failed:\n%s", log)
	}
	if n := b.gets() - before; n != 4 {
		t.Errorf("the killed run and the next fetched %d objects, want 4: each changed object once", n)
	}
	if n := b.deleted(); n != 1 {
		t.Fatalf("%d documents deleted, want d5's", n)
	}

	b.putVersions(4, "third")
	b.remove("docs/d4.txt")
	before = b.gets()
	if ok, _ := b.run(paged, crashpoint.EnvVar+"=after-record-before-publish"); ok {
		t.Fatal("the producer did not die at its crash point")
	}
	if n := b.deleted(); n != 1 {
		t.Fatalf("a run killed mid-fetch deleted %d more documents", n-1)
	}
	if ok, log := b.run(paged); !ok {
		t.Fatalf("the run after the second kill failed:\n%s", log)
	}
	if n := b.deleted(); n != 2 {
		t.Fatalf("%d documents deleted, want d5's and d4's", n)
	}
	if n := b.gets() - before; n != 4 {
		t.Errorf("the killed run and the next fetched %d objects, want 4: the recorded batch is not fetched again", n)
	}
	b.eventually(60*time.Second, "every third version stored", func() bool {
		for i := range 4 {
			if b.storedText(fmt.Sprintf("docs/d%d.txt", i)) != fmt.Sprintf("document %d, third version", i) {
				return false
			}
		}
		return true
	})
	b.noLeaks()
}

// A follower of an S3 source embeds a put and erases a delete within
// seconds of the store's event notification, with no run started: the
// gateway publishes its events as plain NATS messages, S3_EVENTS
// captures them, and the follower's durable takes them. Its reconciling
// listing comes only every minute, so the bound is the events'.
func TestS3SourceFollowsTheStoresEvents(t *testing.T) {
	t.Parallel()
	b := newS3BundleWith(t, true)
	b.startServices()
	b.put("docs/d0.txt", "document 0, before the follower")
	addr := freeAddr(t)
	args, env := b.s3Args([]string{"--follow", "--follow-poll", "1m"}, "METRICS_ADDR="+addr)
	b.startProducerWith(args, env...)
	b.eventually(60*time.Second, "the first listing stored", func() bool { return b.storedText("docs/d0.txt") == "document 0, before the follower" })

	const bound = 10 * time.Second
	start := time.Now()
	b.put("docs/d1.txt", "document 1, put while following")
	b.eventually(bound, "the put object embedded", func() bool { return b.storedText("docs/d1.txt") == "document 1, put while following" })
	t.Logf("a put embedded in %s", time.Since(start).Round(time.Millisecond))
	b.eventually(bound, "the event-driven run's lag exported", func() bool {
		m := scrape(addr)
		return strings.Contains(m, `sluice_source_changes_pending{source="docs"} 0`) && strings.Contains(m, `sluice_source_lag_seconds{source="docs"}`)
	})
	// Its runs declared the source: sluice sources ls shows it live, with
	// its last sync and the lag from the event to the run's end.
	if s, err := sources.Get(context.Background(), b.db.Pool, "docs"); err != nil || s.Kind != sources.KindS3 || !s.Live ||
		s.LastSyncAt == nil || s.LastError != "" || s.Lag == nil || *s.Lag > bound || !strings.Contains(string(s.Settings), "s3://corpus/docs/") {
		t.Errorf("the followed S3 source reads %+v (%s, %v); want kind s3, live, with its last sync and a lag under %s", s, s.Settings, err, bound)
	}

	start = time.Now()
	b.remove("docs/d0.txt")
	b.eventually(bound, "the deleted object's document erased", func() bool { return b.deleted() == 1 && b.storedText("docs/d0.txt") == "" })
	t.Logf("a delete erased in %s", time.Since(start).Round(time.Millisecond))
	b.noLeaks()
	if n := b.gets(); n != 2 {
		t.Errorf("the follower fetched %d objects, want 2: each put once", n)
	}
}

// A follower's reconciling listing, every --follow-poll, applies the
// changes no event notification said: here the gateway publishes none.
func TestS3SourceFollowerListsWhatNoEventSaid(t *testing.T) {
	t.Parallel()
	b := newS3Bundle(t)
	b.startServices()
	b.put("docs/d0.txt", "document 0, before the follower")
	args, env := b.s3Args([]string{"--follow", "--follow-poll", "2s"})
	b.startProducerWith(args, env...)
	b.eventually(60*time.Second, "the first listing stored", func() bool { return b.storedText("docs/d0.txt") == "document 0, before the follower" })
	b.put("docs/d1.txt", "document 1, never notified")
	b.remove("docs/d0.txt")
	b.eventually(20*time.Second, "the next listing applied the put and the delete", func() bool {
		return b.storedText("docs/d1.txt") == "document 1, never notified" && b.deleted() == 1
	})
	b.noLeaks()
}
