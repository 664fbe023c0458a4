package s3source_test

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"

	"github.com/sluicehq/sluice/internal/content/corpus"
	"github.com/sluicehq/sluice/internal/content/s3source"
	"github.com/sluicehq/sluice/internal/dev/testenv"
	"github.com/sluicehq/sluice/pkg/classify"
)

// ledger is a Ledger holding nothing: every object is to fetch. before,
// when set, runs on each page first: it stands for what happens to the
// store between the listing and the fetch.
type ledger struct {
	pages  [][]s3source.Object
	before func(page []s3source.Object)
}

func (l *ledger) Changed(_ context.Context, page []s3source.Object) ([]s3source.Object, error) {
	l.pages = append(l.pages, page)
	if l.before != nil {
		l.before(page)
	}
	return page, nil
}

// setup starts a gateway with the bucket corpus and returns a client
// for it, signed with the gateway's keys from a secret file.
func setup(t *testing.T) (*testenv.S3Gateway, *s3.Client, s3source.ClientConfig) {
	t.Helper()
	gw := testenv.NewS3Gateway(t)
	gw.Bucket(t, "corpus")
	secret := filepath.Join(t.TempDir(), "s3-secret")
	if err := os.WriteFile(secret, []byte(testenv.S3AccessKey+"\n"+testenv.S3SecretKey+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cc := s3source.ClientConfig{Endpoint: gw.Endpoint, Region: testenv.S3Region, SecretFile: secret}
	client, err := s3source.NewClient(context.Background(), cc)
	if err != nil {
		t.Fatal(err)
	}
	return gw, client, cc
}

func put(t *testing.T, c *s3.Client, key, body string) {
	t.Helper()
	if _, err := c.PutObject(context.Background(), &s3.PutObjectInput{Bucket: aws.String("corpus"), Key: aws.String(key), Body: strings.NewReader(body)}); err != nil {
		t.Fatalf("put %s: %v", key, err)
	}
}

// walk runs a Source over loc and returns the documents it yielded.
func walk(t *testing.T, c *s3.Client, l s3source.Ledger, cfg s3source.Config) ([]corpus.Document, *s3source.Source, error) {
	t.Helper()
	cfg.SpoolDir = t.TempDir()
	cfg.Backoff = classify.Backoff{Base: time.Millisecond, Max: 10 * time.Millisecond}
	src, err := s3source.New(c, l, cfg)
	if err != nil {
		t.Fatal(err)
	}
	var docs []corpus.Document
	err = src.Walk(context.Background(), func(d corpus.Document) error { docs = append(docs, d); return nil })
	return docs, src, err
}

// A walk lists the prefix page by page, yields each object's document
// as a file's (HTML reduced to its text) under its key, spools the
// bytes until Take, and yields an object deleted between the listing
// and the fetch as a tombstone.
func TestWalkYieldsTheObjectsUnderThePrefix(t *testing.T) {
	t.Parallel()
	_, c, _ := setup(t)
	put(t, c, "docs/a.txt", "alpha text")
	put(t, c, "docs/b.html", "<html><head><title>Bee</title></head><body><p>bravo text</p></body></html>")
	put(t, c, "docs/c.txt", "charlie text")
	put(t, c, "other/d.txt", "outside the prefix")
	l := &ledger{before: func(page []s3source.Object) {
		if page[0].Key == "docs/c.txt" {
			_, _ = c.DeleteObject(context.Background(), &s3.DeleteObjectInput{Bucket: aws.String("corpus"), Key: aws.String("docs/c.txt")})
		}
	}}
	loc, _ := s3source.ParseLocation("s3://corpus/docs/")
	docs, src, err := walk(t, c, l, s3source.Config{Location: loc, PageSize: 2})
	if err != nil {
		t.Fatal(err)
	}
	if len(l.pages) != 2 || len(l.pages[0]) != 2 || l.pages[0][0].ETag == "" || l.pages[0][0].Size != int64(len("alpha text")) {
		t.Fatalf("pages = %+v; want two pages, the first of two objects with their ETag and size", l.pages)
	}
	if len(docs) != 3 {
		t.Fatalf("yielded %d documents, want 3: %+v", len(docs), docs)
	}
	if docs[0].NativeID != "docs/a.txt" || docs[0].Text != "alpha text" || docs[0].Metadata["path"] != "docs/a.txt" {
		t.Errorf("first document = %+v; want docs/a.txt's text", docs[0])
	}
	if docs[1].Text != "bravo text" || docs[1].Metadata["title"] != "Bee" || docs[1].File != "s3://corpus/docs/b.html" {
		t.Errorf("HTML document = %+v; want its reduced text and title, known by its s3 address", docs[1])
	}
	if !docs[2].Deleted || docs[2].NativeID != "docs/c.txt" || len(src.Gone()) != 1 {
		t.Errorf("the object deleted after its listing = %+v (gone %v); want a tombstone", docs[2], src.Gone())
	}
	r, err := src.Open("s3://corpus/docs/b.html")
	if err != nil {
		t.Fatalf("the spooled object cannot be opened before it is recorded: %v", err)
	}
	r.Close()
	taken := src.Take([]string{"docs/a.txt", "docs/b.html", "not-fetched"})
	if len(taken) != 2 || taken[0].ETag != l.pages[0][0].ETag {
		t.Errorf("Take = %+v; want the two fetched objects with the ETags listed", taken)
	}
	if _, err := src.Open("s3://corpus/docs/b.html"); err == nil {
		t.Error("a recorded object's spool file is still there")
	}
}

// A missing bucket and refused credentials fail the walk at once with
// ErrNoSuchBucket or ErrAccessDenied and what to fix.
func TestWalkFailsOnAMissingBucketOrADenial(t *testing.T) {
	t.Parallel()
	gw, c, cc := setup(t)
	loc, _ := s3source.ParseLocation("s3://missing/docs/")
	_, _, err := walk(t, c, &ledger{}, s3source.Config{Location: loc})
	if !errors.Is(err, s3source.ErrNoSuchBucket) || !strings.Contains(err.Error(), "create the bucket") {
		t.Errorf("walk of a missing bucket: %v; want ErrNoSuchBucket saying what to fix", err)
	}
	bad := filepath.Join(t.TempDir(), "wrong")
	if err := os.WriteFile(bad, []byte(testenv.S3AccessKey+"\nnot-the-secret\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	cc.SecretFile = bad
	wrong, err := s3source.NewClient(context.Background(), cc)
	if err != nil {
		t.Fatal(err)
	}
	loc, _ = s3source.ParseLocation("s3://corpus/")
	before := gw.Requests(t, "s3_ListObjectsV2")
	_, _, err = walk(t, wrong, &ledger{}, s3source.Config{Location: loc})
	if !errors.Is(err, s3source.ErrAccessDenied) || !strings.Contains(err.Error(), "--s3-secret-file") {
		t.Errorf("walk with a wrong secret: %v; want ErrAccessDenied naming the credentials to fix", err)
	}
	if n := gw.Requests(t, "s3_ListObjectsV2") - before; n != 1 {
		t.Errorf("the denied listing was sent %d times, want once (not retried)", n)
	}
}

// Throttling (SlowDown) and 5xx replies are retried with backoff until
// the store answers; a store that keeps failing fails the walk after
// the retries, classified as a server error.
func TestWalkRetriesThrottlingAndServerErrors(t *testing.T) {
	t.Parallel()
	gw, _, cc := setup(t)
	target, _ := url.Parse(gw.Endpoint)
	proxy := httputil.NewSingleHostReverseProxy(target)
	var failures atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := failures.Add(-1)
		switch {
		case n >= 1 && n%2 == 0:
			w.WriteHeader(http.StatusServiceUnavailable)
			_, _ = w.Write([]byte(`<?xml version="1.0" encoding="UTF-8"?><Error><Code>SlowDown</Code><Message>Please reduce your request rate.</Message></Error>`))
		case n >= 0:
			w.WriteHeader(http.StatusInternalServerError)
			_, _ = w.Write([]byte(`<?xml version="1.0" encoding="UTF-8"?><Error><Code>InternalError</Code><Message>try again</Message></Error>`))
		default:
			proxy.ServeHTTP(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	cc.Endpoint = srv.URL
	c, err := s3source.NewClient(context.Background(), cc)
	if err != nil {
		t.Fatal(err)
	}
	put(t, c, "docs/a.txt", "alpha text")
	failures.Store(3)
	loc, _ := s3source.ParseLocation("s3://corpus/docs/")
	docs, _, err := walk(t, c, &ledger{}, s3source.Config{Location: loc})
	if err != nil || len(docs) != 1 || docs[0].Text != "alpha text" {
		t.Fatalf("walk through three failures: %v, %+v; want the object", err, docs)
	}
	failures.Store(1000)
	_, _, err = walk(t, c, &ledger{}, s3source.Config{Location: loc, Retries: 2})
	var se *s3source.StoreError
	if !errors.As(err, &se) || se.Decision.Class != classify.ClassServerError || se.Op != "ListObjectsV2" {
		t.Errorf("walk of a failing store: %v; want a StoreError classified server_error", err)
	}
}
