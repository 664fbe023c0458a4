package pipeline

import (
	"github.com/rs/zerolog"

	"github.com/sluicehq/sluice/pkg/messages"
)

// ChunkFields adds the ids every chunk event carries: the chunk, its
// document version, its source and the run that published it, so that a
// run's or a source's events can be followed in the logs. Never its text.
func ChunkFields(ev *zerolog.Event, docID string, index int, version int64, sourceID, runID string) *zerolog.Event {
	return ev.Str("doc_id", docID).Int("chunk_index", index).Int64("version", version).
		Str("source_id", sourceID).Str("run_id", runID)
}

// JobFields is ChunkFields for a decoded chunk job.
func JobFields(ev *zerolog.Event, c messages.ChunkJob) *zerolog.Event {
	return ChunkFields(ev, c.DocID, c.ChunkIndex, c.DocVersion, c.SourceID, c.RunID)
}
