// Package view is the operator's view of the sources: the declared ones,
// with their syncs, and those only the documents name, each with its
// documents' counts. `sluice sources ls` and the console's Sources page
// read it. It reads through the owners of the tables it joins (sources,
// documents, the object ledger) and holds no statement of its own.
package view

import (
	"context"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/sluicehq/sluice/internal/store/manifest"
	"github.com/sluicehq/sluice/internal/store/objects"
	"github.com/sluicehq/sluice/internal/store/sources"
)

// Querier is what the reads run on: a pool, a connection or a
// transaction.
type Querier = sources.Querier

// The modes of a source.
const (
	// ModeLive is a source a follower keeps in step: it woke up within
	// sources.LiveWindow.
	ModeLive = "live"
	// ModeBatch is a source read by runs started by hand or a schedule.
	ModeBatch = "batch"
)

// Source is one source as an operator sees it.
type Source struct {
	Name string `json:"name"`
	// Kind is table, s3, directory or jsonl; a source only seen in
	// documents is directory when they came from files, jsonl otherwise.
	Kind string `json:"kind"`
	// Mode is ModeLive or ModeBatch.
	Mode     string `json:"mode"`
	Declared bool   `json:"declared"`
	// LastSyncAt is a declared source's last successful sync, or the
	// last change of an undeclared one's documents.
	LastSyncAt *time.Time `json:"last_sync_at"`
	// LagSeconds is the last sync's lag from change to publish.
	LagSeconds *float64 `json:"lag_seconds"`
	// LastError is the last sync's error; empty when it succeeded.
	LastError string `json:"last_error,omitempty"`
	// Documents are those not deleted, Ready those of them whose chunks
	// are all stored, Deleted the tombstones.
	Documents int64 `json:"documents"`
	Ready     int64 `json:"ready"`
	Deleted   int64 `json:"deleted"`
}

// List reads every source, declared or named by documents, by name.
func List(ctx context.Context, q Querier) ([]Source, error) {
	declared, err := sources.List(ctx, q)
	if err != nil {
		return nil, err
	}
	counts, err := manifest.SourceCounts(ctx, q)
	if err != nil {
		return nil, err
	}
	out := make([]Source, 0, len(declared)+len(counts))
	for _, s := range declared {
		r := Source{Name: s.Name, Kind: string(s.Kind), Mode: ModeBatch, Declared: true, LastSyncAt: utc(s.LastSyncAt), LastError: s.LastError}
		if s.Live {
			r.Mode = ModeLive
		}
		if s.Lag != nil {
			secs := s.Lag.Seconds()
			r.LagSeconds = &secs
		}
		n := counts[s.Name]
		r.Documents, r.Ready, r.Deleted = n.Live, n.Ready, n.Deleted
		delete(counts, s.Name)
		out = append(out, r)
	}
	s3, err := objects.Sources(ctx, q, slices.Collect(maps.Keys(counts)))
	if err != nil {
		return nil, err
	}
	for name, n := range counts {
		r := Source{Name: name, Kind: string(sources.KindJSONL), Mode: ModeBatch, Documents: n.Live, Ready: n.Ready, Deleted: n.Deleted}
		switch {
		case s3[name]:
			r.Kind = string(sources.KindS3)
		case n.Files:
			r.Kind = string(sources.KindDirectory)
		}
		r.LastSyncAt = utc(&n.LastChange)
		out = append(out, r)
	}
	slices.SortFunc(out, func(a, b Source) int { return strings.Compare(a.Name, b.Name) })
	return out, nil
}

// utc is t in UTC, or nil.
func utc(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}
