package s3source

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strconv"
	"sync"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/failsafe-go/failsafe-go"
	"github.com/failsafe-go/failsafe-go/retrypolicy"

	"github.com/sluicehq/sluice/internal/content/corpus"
	"github.com/sluicehq/sluice/pkg/classify"
)

// Object is one object of a listing.
type Object struct {
	// Key is the object's key in its bucket: its document's native id.
	Key string
	// ETag is the object's entity tag, quotes included.
	ETag string
	// VersionID is the object's version id where the bucket keeps
	// versions; empty otherwise.
	VersionID string
	// Size is the object's size in bytes.
	Size int64
}

// Ledger is what the source compares a listing with.
type Ledger interface {
	// Changed takes a page of the listing, marks the documents of the
	// objects recorded as listed read by the run, and returns the others:
	// the objects to fetch.
	Changed(ctx context.Context, page []Object) ([]Object, error)
}

// Config configures a Source.
type Config struct {
	// Location is the bucket and prefix read. Required.
	Location Location
	// Corpus reads each fetched object as corpus.File reads a file: its
	// formats, extractor and size limits. Its Inputs are not read.
	Corpus corpus.Config
	// SpoolDir holds the fetched objects until their documents are
	// recorded. Defaults to os.TempDir().
	SpoolDir string
	// PageSize is how many keys one listing request asks for. Defaults to
	// DefaultPageSize, the most S3 gives.
	PageSize int32
	// Retries is how many times a request that failed transiently is
	// tried again. Defaults to DefaultRetries.
	Retries int
	// Backoff spaces the retries. Its zero value is classify's defaults.
	Backoff classify.Backoff
	// Crash, when set, is called at the source's crash points:
	// CrashBeforeNextPage.
	Crash func(point string)
}

// Defaults of Config.
const (
	DefaultPageSize = 1000
	DefaultRetries  = 5
)

// CrashBeforeNextPage is the crash point before each listing request
// after the first: the previous page's objects are yielded, and
// recorded when the producer's batch is a page.
const CrashBeforeNextPage = "s3-before-next-page"

// Source is a corpus.Walker over the objects under a prefix.
type Source struct {
	cfg    Config
	client *s3.Client
	ledger Ledger
	exec   failsafe.Executor[any]

	mu sync.Mutex
	// fetched are the objects yielded whose documents are not yet
	// recorded, by native id, with their spool files.
	fetched map[string]spooled
	gone    []string
	seq     int
}

// spooled is a fetched object and the file holding its bytes.
type spooled struct {
	obj  Object
	path string
}

var _ corpus.Walker = (*Source)(nil)

// New returns a Source reading cfg.Location with client, comparing with
// ledger.
func New(client *s3.Client, ledger Ledger, cfg Config) (*Source, error) {
	if cfg.Location.Bucket == "" {
		return nil, errors.New("s3 source: name a bucket, such as s3://corpus/docs/")
	}
	if cfg.SpoolDir == "" {
		cfg.SpoolDir = os.TempDir()
	}
	if cfg.PageSize == 0 {
		cfg.PageSize = DefaultPageSize
	}
	if cfg.Retries == 0 {
		cfg.Retries = DefaultRetries
	}
	if cfg.Crash == nil {
		cfg.Crash = func(string) {}
	}
	retry := retrypolicy.NewBuilder[any]().
		HandleIf(func(_ any, err error) bool { return retryable(err) }).
		WithMaxRetries(cfg.Retries).
		WithDelayFunc(func(exec failsafe.ExecutionAttempt[any]) time.Duration {
			return cfg.Backoff.Delay(exec.Retries() + 1)
		}).
		ReturnLastFailure().
		Build()
	return &Source{cfg: cfg, client: client, ledger: ledger, exec: failsafe.With[any](retry), fetched: map[string]spooled{}}, nil
}

// Walk lists the prefix a page at a time and yields the document of
// every new or changed object, and a tombstone for each object gone
// before it could be fetched. It returns an error, and the walk is
// incomplete, when a listing or fetch fails for good.
func (s *Source) Walk(ctx context.Context, fn func(corpus.Document) error) error {
	var token *string
	for page := 0; ; page++ {
		if page > 0 {
			s.cfg.Crash(CrashBeforeNextPage)
		}
		objs, next, err := s.list(ctx, token)
		if err != nil {
			return err
		}
		changed, err := s.ledger.Changed(ctx, objs)
		if err != nil {
			return err
		}
		for _, o := range changed {
			if err := s.fetch(ctx, o, fn); err != nil {
				return err
			}
		}
		if next == nil {
			return nil
		}
		token = next
	}
}

// list asks for one page of the listing.
func (s *Source) list(ctx context.Context, token *string) ([]Object, *string, error) {
	loc := s.cfg.Location
	out, err := s.exec.WithContext(ctx).Get(func() (any, error) {
		out, err := s.client.ListObjectsV2(ctx, &s3.ListObjectsV2Input{Bucket: aws.String(loc.Bucket), Prefix: aws.String(loc.Prefix),
			ContinuationToken: token, MaxKeys: aws.Int32(s.cfg.PageSize)})
		if err != nil {
			return nil, classified(opList, loc.String(), err)
		}
		return out, nil
	})
	if err != nil {
		return nil, nil, err
	}
	page := out.(*s3.ListObjectsV2Output)
	objs := make([]Object, 0, len(page.Contents))
	for _, c := range page.Contents {
		objs = append(objs, Object{Key: aws.ToString(c.Key), ETag: aws.ToString(c.ETag), Size: aws.ToInt64(c.Size)})
	}
	if !aws.ToBool(page.IsTruncated) {
		return objs, nil, nil
	}
	return objs, page.NextContinuationToken, nil
}

// S3 operations, as errors name them.
const (
	opList = "ListObjectsV2"
	opGet  = "GetObject"
)

// fetch copies o to a spool file and yields its document, or its
// tombstone when it is gone.
func (s *Source) fetch(ctx context.Context, o Object, fn func(corpus.Document) error) error {
	s.mu.Lock()
	s.seq++
	spool := filepath.Join(s.cfg.SpoolDir, "sluice-s3-"+strconv.Itoa(os.Getpid())+"-"+strconv.Itoa(s.seq)+path.Ext(o.Key))
	s.mu.Unlock()
	got, err := s.download(ctx, o, spool)
	if errors.Is(err, errNoSuchKey) {
		_ = os.Remove(spool)
		s.mu.Lock()
		s.gone = append(s.gone, o.Key)
		s.mu.Unlock()
		return fn(corpus.Document{NativeID: o.Key, Status: corpus.StatusDeleted, Deleted: true})
	}
	if err != nil {
		_ = os.Remove(spool)
		return err
	}
	s.mu.Lock()
	s.fetched[o.Key] = spooled{obj: got, path: spool}
	s.mu.Unlock()
	return corpus.File(ctx, s.cfg.Corpus, spool, s.cfg.Location.URI(o.Key), o.Key, fn)
}

// download copies the object to path, with retries, and returns it as
// fetched: its ETag and size may have changed since the listing.
func (s *Source) download(ctx context.Context, o Object, path string) (Object, error) {
	uri := s.cfg.Location.URI(o.Key)
	got, err := s.exec.WithContext(ctx).Get(func() (any, error) {
		out, err := s.client.GetObject(ctx, &s3.GetObjectInput{Bucket: aws.String(s.cfg.Location.Bucket), Key: aws.String(o.Key)})
		if err != nil {
			return nil, classified(opGet, uri, err)
		}
		defer out.Body.Close()
		f, err := os.Create(path)
		if err != nil {
			return nil, fmt.Errorf("s3 source: spool %s: %w", uri, err)
		}
		n, err := io.Copy(f, out.Body)
		if cerr := f.Close(); err == nil && cerr != nil {
			return nil, fmt.Errorf("s3 source: spool %s: %w", uri, cerr)
		}
		if err != nil {
			return nil, classified(opGet, uri, err)
		}
		return Object{Key: o.Key, ETag: aws.ToString(out.ETag), VersionID: aws.ToString(out.VersionId), Size: n}, nil
	})
	if err != nil {
		return Object{}, err
	}
	return got.(Object), nil
}

// Open opens the spool file of a fetched object by the name its
// document's File gives (its s3:// address), for the producer to keep
// the bytes of a parked object.
func (s *Source) Open(uri string) (io.ReadCloser, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	for key, sp := range s.fetched {
		if s.cfg.Location.URI(key) == uri {
			return os.Open(sp.path)
		}
	}
	return nil, fmt.Errorf("%s is not spooled", uri)
}

// Take returns the fetched objects among natives, the native ids of
// documents being recorded, and forgets them and their spool files:
// call it in the transaction that records them, and write them to the
// ledger there.
func (s *Source) Take(natives []string) []Object {
	s.mu.Lock()
	defer s.mu.Unlock()
	var objs []Object
	for _, id := range natives {
		sp, ok := s.fetched[id]
		if !ok {
			continue
		}
		objs = append(objs, sp.obj)
		_ = os.Remove(sp.path)
		delete(s.fetched, id)
	}
	return objs
}

// Gone returns the keys listed that were gone when fetched.
func (s *Source) Gone() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]string(nil), s.gone...)
}

// Close removes the spool files of documents never recorded.
func (s *Source) Close() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for id, sp := range s.fetched {
		_ = os.Remove(sp.path)
		delete(s.fetched, id)
	}
}
