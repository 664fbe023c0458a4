package messages

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"strconv"
	"strings"
)

// NATS header names set on every envelope.
const (
	// HeaderMsgID carries the JetStream deduplication id: ChunkMsgID,
	// ReplayMsgID or DeadLetterMsgID.
	HeaderMsgID = "Nats-Msg-Id"
	// HeaderSchema carries the body's schema version in decimal, so that a
	// reader can route or reject a message without parsing it.
	HeaderSchema = "Sluice-Schema"
)

// DocID is the stable id of a document: "d_" and 32 hex characters of
// SHA-256 over sourceID, a NUL and nativeID. Re-ingesting the same document
// from the same source yields the same id, which is what makes re-ingestion
// an upsert rather than a duplicate. The NUL keeps ("ab","c") and ("a","bc")
// apart.
func DocID(sourceID, nativeID string) string {
	return "d_" + shortHash(sourceID+"\x00"+nativeID)
}

// DeadLetterID is the stable id of a chunk's dead letter: "dl_" and 32 hex
// characters of SHA-256 over docID, a NUL and the decimal chunk index. It
// does not depend on the version or the failure, so every failure of one
// chunk updates one dead_letters row.
func DeadLetterID(docID string, chunkIndex int) string {
	return "dl_" + shortHash(docID+"\x00"+strconv.Itoa(chunkIndex))
}

func shortHash(s string) string {
	sum := sha256.Sum256([]byte(s))
	return hex.EncodeToString(sum[:16])
}

// ChunkMsgID is the Nats-Msg-Id of a chunk job, "<doc_id>:<chunk_index>:
// <doc_version>", so that republishing the same chunk of the same version
// inside the duplicates window is dropped by the server.
func ChunkMsgID(docID string, chunkIndex int, docVersion int64) string {
	return docID + ":" + strconv.Itoa(chunkIndex) + ":" + strconv.FormatInt(docVersion, 10)
}

// ParseChunkMsgID splits a ChunkMsgID. A consumer that cannot decode a job's
// body uses it to learn which chunk to park. It fails, matching ErrInvalid,
// unless s has three parts, a valid doc id and two unsigned decimal
// integers, optionally followed by a fourth, "r" and a decimal publish
// generation, which a republish appends.
func ParseChunkMsgID(s string) (docID string, chunkIndex int, docVersion int64, err error) {
	bad := func(why string) error {
		return invalid(HeaderMsgID, fmt.Sprintf("%q is not <doc_id>:<chunk_index>:<doc_version>: %s", displayKey(s), why))
	}
	parts := strings.Split(s, ":")
	if len(parts) == 4 {
		if gen, ok := strings.CutPrefix(parts[3], "r"); !ok || !isDecimal(gen) {
			return "", 0, 0, bad("bad publish generation")
		}
		parts = parts[:3]
	}
	if len(parts) != 3 {
		return "", 0, 0, bad("want three parts separated by ':'")
	}
	if err := checkID("doc_id", parts[0], true); err != nil {
		return "", 0, 0, bad("bad doc id")
	}
	index, ok := parseDecimal(parts[1], maxInt32)
	if !ok {
		return "", 0, 0, bad("bad chunk index")
	}
	version, ok := parseDecimal(parts[2], 1<<63-1)
	if !ok || version < 1 {
		return "", 0, 0, bad("bad doc version")
	}
	return parts[0], int(index), version, nil
}

func isDecimal(s string) bool {
	_, ok := parseDecimal(s, maxInt32)
	return ok
}

// parseDecimal accepts only plain decimal digits: strconv would also take a
// sign, which no builder here writes.
func parseDecimal(s string, limit int64) (int64, bool) {
	if s == "" || indexFunc(s, func(c byte) bool { return '0' <= c && c <= '9' }) >= 0 {
		return 0, false
	}
	v, err := strconv.ParseInt(s, 10, 64)
	return v, err == nil && v <= limit
}

// ReplayMsgID is the Nats-Msg-Id of a replay, "replay:<dead_letter_id>:
// <replay_gen>": one per dead letter and generation, so that a replay
// dispatched twice is published once.
func ReplayMsgID(deadLetterID string, replayGen int) string {
	return "replay:" + deadLetterID + ":" + strconv.Itoa(replayGen)
}

// BackfillMsgID is the Nats-Msg-Id of a BackfillJob, "bf:<queue_id>",
// named by its backfill queue row: a publish repeated after a crash,
// before the row was removed, is deduplicated, while the same chunk owed
// again later is a new row and a new message.
func BackfillMsgID(queueID int64) string {
	return "bf:" + strconv.FormatInt(queueID, 10)
}

// DeadLetterMsgID is the Nats-Msg-Id of a dead letter, "dl:<outbox_id>",
// so that the outbox relay can republish a row after a crash without
// duplicating it.
func DeadLetterMsgID(outboxID int64) string {
	return "dl:" + strconv.FormatInt(outboxID, 10)
}
