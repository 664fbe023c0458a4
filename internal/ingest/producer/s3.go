package producer

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"time"

	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/sluicehq/sluice/internal/content/corpus"
	"github.com/sluicehq/sluice/internal/content/s3source"
	"github.com/sluicehq/sluice/internal/platform/config"
	"github.com/sluicehq/sluice/internal/platform/crashpoint"
	"github.com/sluicehq/sluice/internal/platform/policy"
	"github.com/sluicehq/sluice/internal/platform/service"
	"github.com/sluicehq/sluice/internal/store/erase"
	"github.com/sluicehq/sluice/internal/store/manifest"
	"github.com/sluicehq/sluice/internal/store/objects"
	"github.com/sluicehq/sluice/internal/store/sources"
	"github.com/sluicehq/sluice/pkg/messages"
)

// S3Settings are the producer's settings of an S3 source.
type S3Settings struct {
	// URL is the s3://bucket/prefix read instead of inputs.
	URL string
	// Client says where the store is and who reads it.
	Client s3source.ClientConfig
	// PageSize is how many keys a listing request asks for. Defaults to
	// s3source.DefaultPageSize.
	PageSize int
}

// registerS3 registers the S3 source's settings on l.
func registerS3(l *config.Loader, s *S3Settings) {
	l.String(&s.URL, "s3", "", "", "read the objects under s3://bucket/prefix instead of inputs, fetching only the new and changed ones (the key is the native id)")
	l.String(&s.Client.Endpoint, "s3-endpoint", "S3_ENDPOINT", "", "URL of an S3-compatible store, addressed path-style (empty: AWS's endpoint for the region)")
	l.String(&s.Client.Region, "s3-region", "S3_REGION", "", "region the S3 requests are signed for (empty: AWS_REGION or the shared config's, else "+s3source.DefaultRegion+")")
	l.String(&s.Client.SecretFile, "s3-secret-file", "S3_SECRET_FILE", "", "file holding the S3 access key id on its first line and the secret access key on its second (empty: AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, the shared config, or the instance's role)")
	l.Int(&s.PageSize, "s3-page-size", "S3_PAGE_SIZE", s3source.DefaultPageSize, "keys asked for by each listing request of an S3 source (at most 1000)")
}

// validate says what is wrong with the S3 settings of f.
func (s S3Settings) validate(f *ServiceConfig) error {
	if s.URL == "" {
		return nil
	}
	if f.TableSource != "" {
		return fmt.Errorf("--s3 and --table-source %s: a producer reads one source; drop one of them", f.TableSource)
	}
	if len(f.Include) > 0 || len(f.Exclude) > 0 {
		return fmt.Errorf("--include and --exclude select the files of a walked directory, not objects: narrow --s3's prefix instead")
	}
	if s.PageSize < 1 || s.PageSize > s3source.DefaultPageSize {
		return fmt.Errorf("--s3-page-size %d: set it between 1 and %d", s.PageSize, s3source.DefaultPageSize)
	}
	_, err := s3source.ParseLocation(s.URL)
	return err
}

// s3Ledger is the object ledger as one run of an S3 source sees it.
type s3Ledger struct {
	pool                  *pgxpool.Pool
	source, bucket, runID string
	// unchanged counts the objects listed as recorded, not fetched.
	unchanged int
}

var _ s3source.Ledger = (*s3Ledger)(nil)

// Changed marks read by the run the documents of the page's objects the
// ledger holds as listed, and returns the others. An object recorded
// whose document was deleted since is fetched again.
func (l *s3Ledger) Changed(ctx context.Context, page []s3source.Object) ([]s3source.Object, error) {
	keys := make([]string, len(page))
	for i, o := range page {
		keys[i] = o.Key
	}
	var changed []s3source.Object
	err := pgx.BeginFunc(ctx, l.pool, func(tx pgx.Tx) error {
		changed = changed[:0]
		held, err := objects.Read(ctx, tx, l.source, l.bucket, keys)
		if err != nil {
			return err
		}
		var same []s3source.Object
		var docs []string
		for _, o := range page {
			h, ok := held[o.Key]
			if ok && h.Same(objects.Object{Key: o.Key, ETag: o.ETag, VersionID: o.VersionID, Size: o.Size}) {
				same, docs = append(same, o), append(docs, h.DocID)
				continue
			}
			changed = append(changed, o)
		}
		deleted, err := manifest.Deleted(ctx, tx, docs)
		if err != nil {
			return err
		}
		var read, touched []string
		for i, o := range same {
			if deleted[docs[i]] {
				changed = append(changed, o)
				continue
			}
			read, touched = append(read, docs[i]), append(touched, o.Key)
		}
		if err := manifest.MarkRead(ctx, tx, l.runID, read); err != nil {
			return err
		}
		return objects.Touch(ctx, tx, l.source, l.bucket, l.runID, touched)
	})
	if err == nil {
		l.unchanged += len(page) - len(changed)
	}
	return changed, err
}

// recorded writes to the ledger, in the transaction recording their
// documents, the objects src fetched among natives.
func (l *s3Ledger) recorded(src *s3source.Source) func(context.Context, pgx.Tx, []string) error {
	return func(ctx context.Context, tx pgx.Tx, natives []string) error {
		fetched := src.Take(natives)
		rows := make([]objects.Object, len(fetched))
		for i, o := range fetched {
			rows[i] = objects.Object{Key: o.Key, ETag: o.ETag, VersionID: o.VersionID, Size: o.Size, DocID: messages.DocID(l.source, o.Key)}
		}
		return objects.Record(ctx, tx, l.source, l.bucket, l.runID, rows)
	}
}

// forget removes from the ledger the objects gone: those src found gone
// when it fetched them and, after a sync, those the complete listing did
// not name.
func (l *s3Ledger) forget(ctx context.Context, src *s3source.Source, prefix string, synced bool) error {
	if err := objects.Forget(ctx, l.pool, l.source, l.bucket, src.Gone()); err != nil || !synced {
		return err
	}
	_, err := objects.ForgetUnseen(ctx, l.pool, l.source, l.bucket, prefix, l.runID)
	return err
}

// s3Sync runs the producer over an S3 prefix: once, or as a follower.
type s3Sync struct {
	f       *ServiceConfig
	cfg     Config
	rt      *service.Runtime
	client  *s3.Client
	loc     s3source.Location
	formats policy.Formats
	files   *FileMetrics
	deletes *erase.Metrics
	source  *SourceMetrics
	crash   func(string)
	stdout  io.Writer
	stderr  io.Writer
	// followed is when the follower started; zero before.
	followed time.Time
}

// runS3 is the producer command over an S3 prefix: a run that fetches
// the new and changed objects and, with --sync, deletes the documents of
// the objects gone; with --follow, such a run whenever the store's
// events name the prefix, and at least every --follow-poll.
func runS3(ctx context.Context, f *ServiceConfig, lookup func(string) (string, bool), stdout, stderr io.Writer) error {
	loc, err := s3source.ParseLocation(f.S3.URL)
	if err != nil {
		return service.UsageError(err)
	}
	cfg, formats, err := f.withPolicy()
	if err != nil {
		return err
	}
	client, err := s3source.NewClient(ctx, f.S3.Client)
	if err != nil {
		return service.UsageError(err)
	}
	rt, err := service.Start(ctx, "producer", f.Common, service.StartConfig{MaxConns: 4, NATSOptional: !f.Follow}, stderr)
	if err != nil {
		return err
	}
	defer rt.Close()
	if err := declareS3(ctx, rt.Pool, cfg.SourceID, f.S3); err != nil {
		return err
	}
	s := &s3Sync{f: f, cfg: cfg, rt: rt, client: client, loc: loc, formats: formats, files: NewFileMetrics(rt.Registry),
		deletes: erase.NewMetrics(rt.Registry), source: NewSourceMetrics(rt.Registry), crash: crashpoint.FromEnv(lookup), stdout: stdout, stderr: stderr}
	rt.Started()
	if f.Follow {
		return s.follow(ctx, f.FollowPoll)
	}
	return s.run(ctx, time.Time{})
}

// declareS3 records the S3 source in the sources table, as its runs
// declare it, so that `sluice sources ls` shows its syncs. A source of
// the name declared as another kind is refused.
func declareS3(ctx context.Context, pool *pgxpool.Pool, name string, s S3Settings) error {
	endpoint := s.Client.Endpoint
	if u, err := url.Parse(endpoint); err == nil && u.User != nil {
		u.User = nil
		endpoint = u.String()
	}
	err := sources.RecordS3(ctx, pool, name, sources.S3{URL: s.URL, Endpoint: endpoint})
	if errors.Is(err, sources.ErrOtherKind) {
		return service.UsageError(fmt.Errorf("--source %s: %w: give the S3 prefix a source name of its own", name, err))
	}
	return err
}

// run is one producer run over the objects under the prefix, answering
// changes the oldest of which the store announced at oldest (zero when
// no event asked for the run). It records the sync on the source.
func (s *s3Sync) run(ctx context.Context, oldest time.Time) error {
	cfg, f := s.cfg, s.f
	cfg.RunID = ""
	p, err := New(cfg, s.rt.Pool, s.rt.JS, s.rt.Log)
	if err != nil {
		return err
	}
	tally := &FileTally{List: f.ListSkipped, Metrics: s.files}
	corpusCfg := corpus.Config{MaxFileBytes: int64(f.MaxFileBytes), Formats: s.formats.For(cfg.SourceID), Records: recordSchema(s.formats, cfg.SourceID),
		Extractor: corpus.LimitedExtractor{Limits: f.Extract}, OnFile: tally.Observe}
	ledger := &s3Ledger{pool: s.rt.Pool, source: cfg.SourceID, bucket: s.loc.Bucket, runID: p.RunID()}
	src, err := s3source.New(s.client, ledger, s3source.Config{Location: s.loc, Corpus: corpusCfg, PageSize: int32(f.S3.PageSize), Crash: s.crash})
	if err != nil {
		return service.UsageError(err)
	}
	defer src.Close()
	p.DeleteMetrics, p.Crash, p.OpenFile, p.Recorded = s.deletes, s.crash, src.Open, ledger.recorded(src)
	p.Explain = func(err error) error { return f.Common.Fault("producer", err, false) }
	p.Progress, p.Files = progress(s.stderr, s.rt), tally
	start := time.Now()
	sum, err := p.Run(ctx, src)
	// The documents of objects not fetched were read as unchanged.
	sum.Seen, sum.Unchanged = sum.Seen+ledger.unchanged, sum.Unchanged+ledger.unchanged
	if err == nil && sum.Stopped == "" {
		if ferr := ledger.forget(context.WithoutCancel(ctx), src, s.loc.Prefix, cfg.Sync && sum.SyncSkipped == ""); ferr != nil {
			err = fmt.Errorf("s3 source: forget the objects gone: %w", ferr)
		}
	}
	s.recordSync(ctx, sum, oldest, err)
	if perr := printSummary(s.stdout, sum, time.Since(start), f.JSON); perr != nil && err == nil {
		err = perr
	}
	return err
}

// recordSync records a run's end on the source: its time, its error or
// why it stopped, and, when events asked for it and it succeeded, its
// lag from the oldest of them to its end.
func (s *s3Sync) recordSync(ctx context.Context, sum Summary, oldest time.Time, err error) {
	name := s.cfg.SourceID
	if err == nil && sum.Stopped != "" {
		err = fmt.Errorf("run %s stopped (%s)", sum.RunID, sum.Stopped)
	}
	var lag *time.Duration
	if err == nil && !oldest.IsZero() {
		l := time.Since(oldest)
		lag = &l
		s.source.Lag.WithLabelValues(name).Set(l.Seconds())
	}
	if rerr := sources.RecordSync(context.WithoutCancel(ctx), s.rt.Pool, name, lag, err); rerr != nil {
		s.rt.Log.Warn().Err(rerr).Str("source", name).Msg("could not record the sync")
	}
}
