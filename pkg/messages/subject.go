package messages

import (
	"fmt"
	"strings"
)

// Subject filters for stream and consumer configuration (design §4): the
// INGEST stream holds ChunkSubjectFilter and ReplaySubjectFilter, the DLQ
// stream DLQSubjectFilter.
const (
	// ChunkSubjectFilter matches every ChunkSubject; the workers durable.
	ChunkSubjectFilter = "ingest.chunks.>"
	// ReplaySubjectFilter matches every ReplaySubject; the replay durable,
	// which is pausable on its own.
	ReplaySubjectFilter = "ingest.replay.>"
	// BackfillSubjectFilter matches every BackfillSubject; the backfill
	// durable, which writes later index generations.
	BackfillSubjectFilter = "ingest.backfill.>"
	// DLQSubjectFilter matches every DLQSubject.
	DLQSubjectFilter = "dlq.>"
)

// Stream names (design §4): INGEST holds chunk jobs, replays and
// backfills, DLQ dead letters.
const (
	IngestStream = "INGEST"
	DLQStream    = "DLQ"
)

const (
	chunkSubjectPrefix    = "ingest.chunks."
	replaySubjectPrefix   = "ingest.replay."
	backfillSubjectPrefix = "ingest.backfill."
	dlqSubjectPrefix      = "dlq."
)

// ChunkSubject is the subject a source's chunk jobs are published on. The
// source id must pass ValidateSourceID; ChunkJob.Validate ensures that for
// job.SourceID.
func ChunkSubject(sourceID string) string { return chunkSubjectPrefix + sourceID }

// ReplaySubject is the subject replays of a source's dead letters are
// published on. It is separate from ChunkSubject so that replays can be
// paused without stopping fresh work.
func ReplaySubject(sourceID string) string { return replaySubjectPrefix + sourceID }

// BackfillSubject is the subject a source's chunks owed to a later index
// generation are published on, apart from its fresh jobs so that a
// backfill never queues in front of them.
func BackfillSubject(sourceID string) string { return backfillSubjectPrefix + sourceID }

// DLQSubject is the subject a dead letter is published on, so that DLQ
// consumers can filter by disposition and source. The disposition is one of
// the Disposition* constants.
func DLQSubject(disposition, sourceID string) string {
	return dlqSubjectPrefix + disposition + "." + sourceID
}

// SourceFromSubject returns the source id from a ChunkSubject, ReplaySubject
// or DLQSubject. A consumer uses it to name the source of a message whose
// body could not be decoded. It fails, matching ErrInvalid, on any other
// subject.
func SourceFromSubject(subject string) (string, error) {
	var source string
	switch {
	case strings.HasPrefix(subject, chunkSubjectPrefix):
		source = subject[len(chunkSubjectPrefix):]
	case strings.HasPrefix(subject, replaySubjectPrefix):
		source = subject[len(replaySubjectPrefix):]
	case strings.HasPrefix(subject, backfillSubjectPrefix):
		source = subject[len(backfillSubjectPrefix):]
	case strings.HasPrefix(subject, dlqSubjectPrefix):
		disposition, rest, ok := strings.Cut(subject[len(dlqSubjectPrefix):], ".")
		if !ok || !isDisposition(disposition) {
			return "", invalid("subject", fmt.Sprintf("%q is not dlq.<disposition>.<source>", subject))
		}
		source = rest
	default:
		return "", invalid("subject", fmt.Sprintf("%q is not a chunk, replay or DLQ subject", subject))
	}
	if err := ValidateSourceID(source); err != nil {
		return "", err
	}
	return source, nil
}

// ValidateSourceID checks that s can be a source id: 1–64 characters of
// A-Z a-z 0-9 _ -. Source ids are single NATS subject tokens, so dots,
// wildcards and spaces would change which subjects a message lands on. The
// error, matching ErrInvalid, names the offending character.
func ValidateSourceID(s string) error {
	if s == "" {
		return missing("source_id")
	}
	if len(s) > maxSourceIDLen {
		return invalid("source_id", fmt.Sprintf("is %d bytes long; a source id is a NATS subject token and the limit is %d", len(s), maxSourceIDLen))
	}
	if i := indexFunc(s, isSourceIDByte); i >= 0 {
		return invalid("source_id", badChar(s, i)+
			"; a source id is a NATS subject token and may hold only A-Z a-z 0-9 _ -")
	}
	return nil
}

// isSourceIDByte reports whether c may be part of a source id.
func isSourceIDByte(c byte) bool {
	return 'a' <= c && c <= 'z' || 'A' <= c && c <= 'Z' || '0' <= c && c <= '9' || c == '_' || c == '-'
}

// SuggestSourceID returns a source id close to s, for an error message
// about a name ValidateSourceID refuses: each run of characters a source
// id may not hold becomes one "-", without one at either end, and the
// result is cut to the length limit. It returns "" when nothing of s is
// left.
func SuggestSourceID(s string) string {
	var b strings.Builder
	dash := false
	for i := 0; i < len(s); i++ {
		if !isSourceIDByte(s[i]) {
			dash = b.Len() > 0
			continue
		}
		if dash {
			b.WriteByte('-')
			dash = false
		}
		b.WriteByte(s[i])
	}
	out := b.String()
	if len(out) > maxSourceIDLen {
		out = strings.TrimRight(out[:maxSourceIDLen], "-")
	}
	return out
}
