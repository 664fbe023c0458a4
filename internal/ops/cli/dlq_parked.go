package cli

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/nats-io/nats.go/jetstream"
	"github.com/rs/zerolog"

	"github.com/sluicehq/sluice/internal/content/chunk"
	"github.com/sluicehq/sluice/internal/content/corpus"
	"github.com/sluicehq/sluice/internal/failure/parkedfile"
	"github.com/sluicehq/sluice/internal/ingest/producer"
	"github.com/sluicehq/sluice/internal/platform/config"
	"github.com/sluicehq/sluice/internal/platform/policy"
	"github.com/sluicehq/sluice/internal/provider/embedder"
	"github.com/sluicehq/sluice/internal/provider/tokens"
	"github.com/sluicehq/sluice/internal/store/deadletter"
)

// parkedFlags are the settings of a parked file's replay that say how
// the source reads and chunks its files, as the producer's do.
type parkedFlags struct {
	opts        parkedfile.Options
	unit, model string
	policyFile  string
}

// register registers the settings on l, named as the producer's.
func (f *parkedFlags) register(l *config.Loader) {
	o := &f.opts
	l.String(&o.Password, "password", "", "", "parked files: the password of an encrypted PDF")
	l.Int64(&o.MaxDocumentBytes, "max-document-bytes", "", corpus.DefaultMaxDocumentBytes, "parked files: the largest text file read whole (raise it to replay one parked as too_large)")
	l.String(&f.policyFile, "policy-file", "POLICY_FILE", "", "parked files: the policy file the producer read the source's formats and secrets_allow from")
	l.Int64(&o.Producer.MaxKeptFileBytes, "max-kept-file-bytes", "MAX_KEPT_FILE_BYTES", deadletter.DefaultMaxKeptFileBytes, "parked files: largest file whose bytes are kept when it is parked again")
	producer.RegisterLimits(l, &o.Extract)
}

// registerReplay registers the settings of `dlq replay` on parked
// files: which ones (--id, --stage), and how to read and chunk them.
func (f *parkedFlags) registerReplay(l *config.Loader, id, stage *string) {
	l.String(id, "id", "", "", "replay this parked file's dead letter (a file the producer parked whole) from its kept bytes")
	l.String(stage, "stage", "", "", "produce: replay every parked file the --source and --error-class select, from their kept bytes")
	l.Bool(&f.opts.OCR.Accept, "accept-ocr", "", false, "parked files: store an ocr_low_confidence scan's OCR text as it is, below its source's bar (audited with --reason)")
	f.register(l)
	f.registerChunking(l)
}

// registerChunking registers the producer's chunk settings, for a
// command that does not register them already.
func (f *parkedFlags) registerChunking(l *config.Loader) {
	l.Int(&f.opts.Producer.Chunk.Size, "chunk-size", "CHUNK_SIZE", chunk.DefaultSize, "parked files: the producer's --chunk-size")
	l.Int(&f.opts.Producer.Chunk.Overlap, "chunk-overlap", "CHUNK_OVERLAP", chunk.DefaultOverlap, "parked files: the producer's --chunk-overlap")
	l.String(&f.unit, "chunk-unit", "CHUNK_UNIT", string(chunk.DefaultUnit), "parked files: the producer's --chunk-unit")
	l.String(&f.model, "embedder-model", "EMBEDDER_MODEL", embedder.DefaultModel, "parked files: the producer's --embedder-model, whose tokenizer counts its chunks")
}

// options returns the replay's options for dead letters of source (""
// when not known yet: the policy is then read per dead letter).
func (f *parkedFlags) options(chunking chunk.Config, by, reason string) (parkedfile.Options, *policy.Formats, error) {
	o := f.opts
	o.Producer.Chunk = chunking
	o.By, o.Reason = by, reason
	if err := producer.ValidateLimits(o.Extract); err != nil {
		return o, nil, usageErr("%v", err)
	}
	formats, err := policy.LoadFormats(f.policyFile, corpus.CheckFormat)
	if err != nil {
		return o, nil, usageErr("%v", err)
	}
	return o, &formats, nil
}

// chunking is the chunk settings the flags name.
func (f *parkedFlags) chunking() chunk.Config {
	c := f.opts.Producer.Chunk
	c.Unit = chunk.Unit(f.unit)
	c.Tokens, _ = tokens.ForModel(f.model)
	return c
}

// forSource narrows o to source's policy: its formats, the secret rules
// it allows and its OCR settings (a bar lowered since the file was
// parked reads it again under the new bar).
func forSource(o parkedfile.Options, formats *policy.Formats, source string) parkedfile.Options {
	o.Formats = formats.For(source)
	o.Producer.Secrets.Allow = formats.SecretsAllow(source)
	accept := o.OCR.Accept
	o.OCR = producer.OCRSettings(formats.OCR(source))
	o.OCR.Accept = accept
	return o
}

// replayParked replays the parked files ids, dry unless execute, and
// prints what each did.
func replayParked(ctx context.Context, env Env, c *conn, pool *pgxpool.Pool, ids []string, o parkedfile.Options, formats *policy.Formats, execute bool) error {
	var js jetstream.JetStream
	if execute {
		nc, j, err := c.connectNATS("sluice-cli", zerolog.Nop())
		if err != nil {
			return err
		}
		defer nc.Close()
		js = j
	}
	r := parkedfile.New(pool, js, zerolog.Nop())
	var reports []*parkedfile.Report
	var errs []error
	for _, id := range ids {
		src, err := sourceOf(ctx, pool, id)
		if err != nil {
			errs = append(errs, err)
			continue
		}
		oo := forSource(o, formats, src)
		var rep *parkedfile.Report
		if execute {
			rep, err = r.Execute(ctx, id, oo)
		} else {
			rep, err = r.DryRun(ctx, id, oo)
		}
		if rep != nil {
			reports = append(reports, rep)
			if !c.JSON {
				printParkedReport(env.Stdout, rep)
			}
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	if c.JSON {
		_ = printJSON(env.Stdout, reports)
	}
	return errors.Join(errs...)
}

// sourceOf is dead letter id's source.
func sourceOf(ctx context.Context, pool *pgxpool.Pool, id string) (string, error) {
	l, err := deadletter.Get(ctx, pool, id)
	if err != nil {
		return "", fmt.Errorf("%s: %w", id, err)
	}
	return l.Source, nil
}

func printParkedReport(w io.Writer, r *parkedfile.Report) {
	if r.DryRun {
		fmt.Fprintf(w, "DRY RUN %s: nothing was recorded or published; add --execute --reason \"...\" to replay.\n", r.ReplayID)
	} else {
		fmt.Fprintf(w, "replay %s\n", r.ReplayID)
	}
	fmt.Fprintf(w, "parked file %s: %s (source %s), version %d, parked as %s; from its %s (%d bytes)\n",
		r.DeadLetterID, r.SourceNativeID, r.Source, r.Version, r.Class, r.Origin, r.Bytes)
	if r.AcceptOCR {
		fmt.Fprintln(w, "its OCR text is accepted as it is, below the source's bar")
	}
	if r.Withheld != "" {
		fmt.Fprintf(w, "text withheld from the audit: it matches secret rule %s (its chunks are escalated)\n", r.Withheld)
	} else if r.TextDiff != "" {
		fmt.Fprintf(w, "text:\n%s", r.TextDiff)
	}
	switch r.Outcome {
	case parkedfile.Stored:
		fmt.Fprintf(w, "stored as a new version by run %s: %d chunks published; the dead letter is resolved\n", r.RunID, r.Chunks)
	case parkedfile.Empty:
		fmt.Fprintf(w, "read by run %s: it holds no text\n", r.RunID)
	case parkedfile.ParkedAgain:
		fmt.Fprintf(w, "failed again, by run %s: parked as %s, its bytes kept\n", r.RunID, r.NewClass)
	}
}
