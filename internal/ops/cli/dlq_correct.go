package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/rs/zerolog"

	"github.com/sluicehq/sluice/internal/content/chunk"
	"github.com/sluicehq/sluice/internal/failure/parkedfile"
	"github.com/sluicehq/sluice/internal/failure/replay"
	"github.com/sluicehq/sluice/internal/provider/embedder"
	"github.com/sluicehq/sluice/internal/provider/tokens"
	"github.com/sluicehq/sluice/pkg/messages"
)

// correctUsage is the summary of `sluice dlq correct`.
const correctUsage = "replay one dead letter with a corrected payload (dry run unless --execute)"

// correctHelp heads `sluice dlq correct --help`.
const correctHelp = `sluice dlq correct --id DEAD_LETTER_ID (--text FILE | --metadata FILE | --rederive --from PATH) --reason R [--execute] [--json]

Replays one dead letter with a corrected payload: the chunk text in --text,
the metadata (a JSON object) in --metadata, or with --rederive the chunk
taken again from the directory or JSONL file the source was ingested from,
split with the producer's chunk settings (refused when the source no longer
holds the version the dead letter is of). The corrected job keeps the
chunk's document, index, version, source and run, gets a new content hash,
and goes through every screen again (secrets, policy) before it is embedded
and stored. Without --execute it only prints the diff; either way the
correction is recorded in replay_audit (action correct) with who, why and
the diff. Escalations, resolved dead letters and payloads that are not chunk
jobs are refused.

On a parked file's dead letter (a file the producer parked whole), --text
is keyed text: the file's text typed in by hand, stored as a new version of
the document, chunked with the producer's --chunk-* settings and screened
for secrets as the producer screens; with --execute the dead letter is
resolved. The audit holds who, why and the text's diff.
`

func runDLQCorrect(ctx context.Context, env Env, args []string) error {
	var c conn
	corr := replay.Correction{By: cliPrincipal(env)}
	var textFile, metaFile, unit, model string
	var rederive, execute bool
	var rd replay.Rederivation
	var pf parkedFlags
	l := newLoader(env, "dlq correct", &c, true)
	pf.register(l)
	l.FlagSet().Usage = func() {
		fmt.Fprint(env.Stderr, correctHelp+"\n")
		l.PrintUsage(env.Stderr)
	}
	l.String(&corr.DeadLetterID, "id", "", "", "the dead letter to correct (required; see sluice dlq ls)")
	l.String(&textFile, "text", "", "", "file holding the corrected chunk text")
	l.String(&metaFile, "metadata", "", "", "file holding the corrected metadata, a JSON object")
	l.Bool(&rederive, "rederive", "", false, "take the chunk again from its source (--from), split as the producer splits it")
	l.String(&rd.From, "from", "", "", "with --rederive: the directory or JSONL file the source was ingested from")
	l.Bool(&rd.JSONL, "jsonl", "", false, "with --rederive: read --from as JSONL whatever its extension, as the producer's --jsonl")
	l.Int(&rd.Chunk.Size, "chunk-size", "CHUNK_SIZE", chunk.DefaultSize, "with --rederive: the producer's --chunk-size")
	l.Int(&rd.Chunk.Overlap, "chunk-overlap", "CHUNK_OVERLAP", chunk.DefaultOverlap, "with --rederive: the producer's --chunk-overlap")
	l.String(&unit, "chunk-unit", "CHUNK_UNIT", string(chunk.DefaultUnit), "with --rederive: the producer's --chunk-unit")
	l.String(&model, "embedder-model", "EMBEDDER_MODEL", embedder.DefaultModel, "with --rederive: the producer's --embedder-model, whose tokenizer counts its chunks")
	l.String(&corr.Reason, "reason", "", "", "why (required; recorded in replay_audit)")
	l.Bool(&execute, "execute", "", false, "dispatch the corrected job; without it, only show the diff")
	rest, err := parse(l, args)
	if err != nil {
		return err
	}
	rd.Chunk.Unit = chunk.Unit(unit)
	rd.Chunk.Tokens, _ = tokens.ForModel(model)
	if err := checkAndRead(&corr, rest, textFile, metaFile, rederive, rd.From); err != nil {
		return err
	}
	pool, err := openPool(ctx, c.DatabaseURL)
	if err != nil {
		return err
	}
	defer pool.Close()
	if parked, err := correctParkedFile(ctx, env, &c, pool, &pf, rd.Chunk, corr, rederive || metaFile != "", execute); parked {
		return err
	}
	if rederive {
		if err := rd.Apply(ctx, pool, &corr); err != nil {
			return err
		}
	}
	var rep *replay.CorrectionReport
	if execute {
		rep, err = executeCorrection(ctx, &c, corr, pool)
	} else {
		rep, err = corr.DryRun(ctx, pool)
	}
	if rep != nil {
		if c.JSON {
			_ = printJSON(env.Stdout, rep)
		} else {
			printCorrection(env.Stdout, rep)
		}
	}
	return err
}

// correctParkedFile stores corr's text as the document of a parked
// file (keyed text): chunked with the producer's settings, screened, and
// audited. It reports false, doing nothing, when corr's dead letter is
// not a parked file's.
func correctParkedFile(ctx context.Context, env Env, c *conn, pool *pgxpool.Pool, pf *parkedFlags, chunking chunk.Config,
	corr replay.Correction, other bool, execute bool) (bool, error) {
	parked, err := parkedfile.New(pool, nil, zerolog.Nop()).IsParkedFile(ctx, corr.DeadLetterID)
	if err != nil || !parked {
		return err != nil, err
	}
	if other || corr.Text == nil {
		return true, usageErr("%s is a parked file's: key its text in with --text FILE (--metadata and --rederive correct chunks)", corr.DeadLetterID)
	}
	opts, formats, err := pf.options(chunking, corr.By, corr.Reason)
	if err != nil {
		return true, err
	}
	opts.Text = corr.Text
	return true, replayParked(ctx, env, c, pool, []string{corr.DeadLetterID}, opts, formats, execute)
}

// executeCorrection connects to NATS and carries the correction out.
func executeCorrection(ctx context.Context, c *conn, corr replay.Correction, pool *pgxpool.Pool) (*replay.CorrectionReport, error) {
	nc, js, err := c.connectNATS("sluice-cli", zerolog.Nop())
	if err != nil {
		return nil, err
	}
	defer nc.Close()
	return corr.Execute(ctx, pool, js)
}

// checkAndRead checks the command line (checkCorrectFlags), then reads
// the correction's files into corr (readCorrection).
func checkAndRead(corr *replay.Correction, rest []string, textFile, metaFile string, rederive bool, from string) error {
	if err := checkCorrectFlags(*corr, rest, textFile, metaFile, rederive, from); err != nil {
		return err
	}
	return readCorrection(corr, textFile, metaFile)
}

// checkCorrectFlags says how to fix a command line that names no
// correction, or two kinds of one.
func checkCorrectFlags(corr replay.Correction, rest []string, textFile, metaFile string, rederive bool, from string) error {
	if err := noArgs("dlq correct", rest); err != nil {
		return err
	}
	switch {
	case corr.DeadLetterID == "":
		return usageErr("name the dead letter: --id DEAD_LETTER_ID (see sluice dlq ls)")
	case corr.Reason == "":
		return usageErr("dlq correct needs --reason: say why, for the audit trail")
	case rederive && (textFile != "" || metaFile != ""):
		return usageErr("--rederive takes text and metadata from the source: give it without --text and --metadata")
	case rederive && from == "":
		return usageErr("--rederive needs --from PATH: the directory or JSONL file the source was ingested from (it is not recorded in PostgreSQL)")
	case !rederive && from != "":
		return usageErr("--from goes with --rederive")
	case !rederive && textFile == "" && metaFile == "":
		return usageErr("give the correction: --text FILE, --metadata FILE, or --rederive --from PATH")
	}
	return nil
}

// readCorrection reads the corrected text and metadata files, each no
// larger than the producer lets a chunk job or its metadata be.
func readCorrection(corr *replay.Correction, textFile, metaFile string) error {
	if textFile != "" {
		b, err := readBounded(textFile, messages.MaxMessageBytes)
		if err != nil {
			return fmt.Errorf("--text: %w", err)
		}
		text := string(b)
		corr.Text = &text
	}
	if metaFile != "" {
		b, err := readBounded(metaFile, messages.MaxMetadataBytes)
		if err != nil {
			return fmt.Errorf("--metadata: %w", err)
		}
		meta := json.RawMessage(b)
		corr.Metadata = &meta
	}
	return nil
}

// errTooLarge is a correction file over its limit.
var errTooLarge = errors.New("file too large")

// readBounded reads the file at path, refusing one over limit bytes
// without reading it all.
func readBounded(path string, limit int) ([]byte, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, int64(limit)+1))
	if err != nil {
		return nil, err
	}
	if len(b) > limit {
		return nil, fmt.Errorf("%w: %s is over %d bytes, the producer's limit", errTooLarge, path, limit)
	}
	return b, nil
}

func printCorrection(w io.Writer, r *replay.CorrectionReport) {
	if r.DryRun {
		fmt.Fprintf(w, "DRY RUN %s: nothing was marked or dispatched; add --execute to replay the correction.\n", r.ReplayID)
	} else {
		fmt.Fprintf(w, "correction %s\n", r.ReplayID)
	}
	fmt.Fprintf(w, "dead letter %s: chunk %d of %s (%s, source %s), version %d, as replay generation %d (%s)\n",
		r.DeadLetterID, r.ChunkIndex, r.DocID, r.SourceNativeID, r.Source, r.Version, r.ReplayGen, r.Origin)
	fmt.Fprintf(w, "content hash %s -> %s\n", r.Diff.HashBefore, r.Diff.HashAfter)
	if r.Diff.Withheld != "" {
		fmt.Fprintf(w, "diff withheld: the payload matches secret rule %s (the consumer escalates the corrected job if it holds it)\n", r.Diff.Withheld)
	}
	for _, d := range []struct{ name, diff string }{{"text", r.Diff.Text}, {"metadata", r.Diff.Metadata}} {
		if d.diff != "" {
			fmt.Fprintf(w, "%s:\n%s", d.name, d.diff)
		}
	}
	if r.Diff.Truncated {
		fmt.Fprintf(w, "(diff of the first %d lines only)\n", replay.MaxDiffLines)
	}
	if !r.DryRun && r.Dispatched {
		fmt.Fprintf(w, "dispatched 1 to %s\n", messages.ReplaySubject(r.Source))
	}
}
