//go:build chaos

package chaos_test

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/sluicehq/sluice/internal/content/s3source"
	"github.com/sluicehq/sluice/internal/dev/localenv"
	"github.com/sluicehq/sluice/internal/dev/testenv"
	"github.com/sluicehq/sluice/internal/platform/natsauth"
	"github.com/sluicehq/sluice/internal/store/sources"
	"github.com/sluicehq/sluice/migrations"
	"github.com/sluicehq/sluice/pkg/messages"
)

// sourceKeys is how many objects, and rows, the sources' writers churn.
const sourceKeys = 20

// An S3 prefix (its gateway notifying NATS) and an application's table
// are followed while their objects and rows are put, changed and
// deleted, and faults land on both servers and on Sluice: the gateway
// killed with -9 and restarted, the application's PostgreSQL stopped
// immediately and started, each follower and a consumer killed with -9
// and started again. Once the writers have set every key a last time,
// with no operator action, the index holds each object's and row's last
// text, nothing of a deleted one, and the fleet converges with reconcile
// exit 0.
func TestSourcesFollowUnderFaults(t *testing.T) {
	t.Parallel()
	f := newFleet(t, fleetOptions{})
	f.services()
	s := newFollowedSources(t, f)
	s.follow()

	ctx, stop := context.WithTimeout(context.Background(), 30*time.Second)
	defer stop()
	var writers sync.WaitGroup
	writers.Go(func() { s.churn(ctx, 1, s.putOrRemove) })
	writers.Go(func() { s.churn(ctx, 2, s.upsertOrDelete) })
	// Every kind of fault lands once a round, in an order of its own.
	seed := uint64(time.Now().UnixNano())
	t.Logf("fault order seed %d", seed)
	rng := rand.New(rand.NewPCG(seed, 11))
	kinds := []string{"gateway", "app-postgres", "s3-follower", "table-follower", "consumer"}
	for ctx.Err() == nil {
		rng.Shuffle(len(kinds), func(i, j int) { kinds[i], kinds[j] = kinds[j], kinds[i] })
		for _, kind := range kinds {
			if ctx.Err() != nil {
				break
			}
			time.Sleep(time.Duration(500+rng.IntN(1000)) * time.Millisecond)
			s.fault(kind)
		}
	}
	writers.Wait()
	s.settle()

	f.eventually(2*time.Minute, "every object's and row's last text stored, nothing of a deleted one", s.inStep)
	s.stopFollowers()
	f.converge(3*time.Minute, -1)
	t.Logf("faults: %v", s.faults)
}

// followedSources are the S3 prefix docs/ of bucket corpus, as source
// docs, and the table articles of an application database of its own
// server, as source articles, with their followers and what each key
// should hold once the writers settle it.
type followedSources struct {
	t      *testing.T
	f      *fleet
	gw     *testenv.S3Gateway
	client *s3.Client
	appPG  *testenv.Postgres
	app    *testenv.Database

	mu        sync.Mutex
	s3f, tblf *proc
	faults    map[string]int
}

func newFollowedSources(t *testing.T, f *fleet) *followedSources {
	t.Helper()
	s := &followedSources{t: t, f: f, faults: map[string]int{}}
	s.gw = testenv.NewS3Gateway(t, testenv.WithS3Events(f.nats.URLFor(natsauth.Owner), "s3.events.corpus"))
	s.gw.Bucket(t, "corpus")
	secret := filepath.Join(f.dir, "s3-secret")
	if err := os.WriteFile(secret, []byte(testenv.S3AccessKey+"\n"+testenv.S3SecretKey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	var err error
	s.client, err = s3source.NewClient(context.Background(), s3source.ClientConfig{Endpoint: s.gw.Endpoint, Region: testenv.S3Region, SecretFile: secret})
	if err != nil {
		t.Fatal(err)
	}
	s.appPG = testenv.NewPostgres(t)
	s.app = testenv.NewDatabase(t, testenv.OnServer(s.appPG))
	if _, err := s.app.Pool.Exec(context.Background(), `CREATE TABLE articles (id bigint PRIMARY KEY, title text, body text)`); err != nil {
		t.Fatal(err)
	}
	if err := sources.Add(context.Background(), f.db.RolePool(t, migrations.OperatorRole), "articles", sources.KindTable,
		sources.Table{DSN: "env:APP_DSN", Table: "public.articles", ID: "id", Text: []string{"title", "body"}}); err != nil {
		t.Fatal(err)
	}
	return s
}

// follow starts the followers that are not running.
func (s *followedSources) follow() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.s3f == nil || !s.s3f.running() {
		env := s.f.env("producer", freeAddr(s.t), "AWS_ACCESS_KEY_ID="+testenv.S3AccessKey, "AWS_SECRET_ACCESS_KEY="+testenv.S3SecretKey,
			"AWS_REGION="+testenv.S3Region, "AWS_CONFIG_FILE=/dev/null", "AWS_SHARED_CREDENTIALS_FILE=/dev/null")
		s.s3f = s.f.spawn("producer", append(env, chunking...), "--source", "docs", "--s3", "s3://corpus/docs/",
			"--s3-endpoint", s.gw.Endpoint, "--sync", "--follow", "--follow-poll", "3s")
	}
	if s.tblf == nil || !s.tblf.running() {
		env := s.f.env("producer", freeAddr(s.t), "APP_DSN="+s.app.URL)
		s.tblf = s.f.spawn("producer", append(env, chunking...), "--table-source", "articles", "--follow", "--follow-poll", "3s")
	}
}

// stopFollowers stops both followers, as a deployment's shutdown would.
func (s *followedSources) stopFollowers() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.s3f.stop()
	s.tblf.stop()
}

// fault lands one fault of kind and brings back what it took down.
func (s *followedSources) fault(kind string) {
	s.t.Helper()
	s.faults[kind]++
	switch kind {
	case "gateway":
		if err := s.gw.Restart(); err != nil {
			s.t.Fatal(err)
		}
	case "app-postgres":
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if err := s.appPG.StopImmediate(ctx); err != nil {
			s.t.Fatal(err)
		}
		time.Sleep(time.Second)
		if err := s.appPG.Start(ctx); err != nil {
			s.t.Fatal(err)
		}
		s.app.Pool.Reset()
	case "s3-follower", "table-follower":
		s.mu.Lock()
		p := s.s3f
		if kind == "table-follower" {
			p = s.tblf
		}
		s.mu.Unlock()
		p.kill()
		s.follow()
	case "consumer":
		s.f.mu.Lock()
		var victim *proc
		for _, p := range s.f.procs {
			if p.name == "consumer" && p.running() {
				victim = p
				break
			}
		}
		s.f.mu.Unlock()
		if victim != nil {
			victim.kill()
			s.f.service("consumer")
		}
	}
}

// churn changes random keys with change until ctx ends; a change that
// fails while its server is down is simply not made.
func (s *followedSources) churn(ctx context.Context, seed uint64, change func(ctx context.Context, key int, text string) error) {
	rng := rand.New(rand.NewPCG(seed, 3))
	for v := 0; ctx.Err() == nil; v++ {
		key := rng.IntN(sourceKeys)
		text := ""
		if rng.IntN(5) > 0 {
			text = fmt.Sprintf("key %d at change %d", key, v)
		}
		attempt, cancel := context.WithTimeout(ctx, 2*time.Second)
		_ = change(attempt, key, text)
		cancel()
		time.Sleep(50 * time.Millisecond)
	}
}

// settle sets every key a last time, each change retried until its
// server takes it: what the index must end with.
func (s *followedSources) settle() {
	s.t.Helper()
	for key := range sourceKeys {
		for _, change := range []func(context.Context, int, string) error{s.putOrRemove, s.upsertOrDelete} {
			var err error
			if !localenv.Poll(time.Minute, func() bool {
				ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
				defer cancel()
				err = change(ctx, key, lastText(key))
				return err == nil
			}) {
				s.t.Fatalf("set key %d a last time: %v", key, err)
			}
		}
	}
}

// lastText is what key holds once settled: every third key deleted.
func lastText(key int) string {
	if key%3 == 0 {
		return ""
	}
	return fmt.Sprintf("key %d, the last version", key)
}

// putOrRemove puts the object of key with text, or deletes it for "".
func (s *followedSources) putOrRemove(ctx context.Context, key int, text string) error {
	k := aws.String(fmt.Sprintf("docs/k%02d.txt", key))
	if text == "" {
		_, err := s.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: aws.String("corpus"), Key: k})
		return err
	}
	_, err := s.client.PutObject(ctx, &s3.PutObjectInput{Bucket: aws.String("corpus"), Key: k, Body: strings.NewReader(text)})
	return err
}

// upsertOrDelete writes the row of key with text as its body, or
// deletes it for "".
func (s *followedSources) upsertOrDelete(ctx context.Context, key int, text string) error {
	if text == "" {
		_, err := s.app.Pool.Exec(ctx, `DELETE FROM articles WHERE id = $1`, key)
		return err
	}
	_, err := s.app.Pool.Exec(ctx, `INSERT INTO articles VALUES ($1, 'article', $2) ON CONFLICT (id) DO UPDATE SET body = excluded.body`, key, text)
	return err
}

// inStep reports whether every key's object and row is stored with its
// last text, or, deleted, has no vector left.
func (s *followedSources) inStep() bool {
	for key := range sourceKeys {
		want := lastText(key)
		object, row := want, want
		if want != "" {
			row = "article\n\n" + want
		}
		if s.storedText("docs", fmt.Sprintf("docs/k%02d.txt", key)) != object || s.storedText("articles", fmt.Sprint(key)) != row {
			return false
		}
	}
	return true
}

// storedText is the text search would find for a document of source,
// its chunks in order; "" for none.
func (s *followedSources) storedText(source, nativeID string) string {
	var text *string
	_ = s.f.db.Pool.QueryRow(context.Background(), `
		SELECT string_agg(c.text, '' ORDER BY c.chunk_index) FROM chunk_embeddings c JOIN documents d USING (doc_id)
		WHERE d.doc_id = $1 AND d.status = 'ready' AND c.version = d.version`, messages.DocID(source, nativeID)).Scan(&text)
	if text == nil {
		return ""
	}
	return *text
}
