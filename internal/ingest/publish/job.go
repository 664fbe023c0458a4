package publish

import (
	"strconv"

	"github.com/sluicehq/sluice/pkg/messages"
)

// Job is one chunk job as the manifest holds it.
type Job struct {
	DocID   string
	Index   int
	Version int64
	// Gen is the manifest's publish_gen: how many times the job was
	// published again because its message had vanished.
	Gen    int
	Source string
	// Raw is the job's exact bytes, as first published.
	Raw []byte
}

// MsgID is the job's Nats-Msg-Id: messages.ChunkMsgID for the first
// publish, with ":r<gen>" appended for every later generation.
func (j Job) MsgID() string {
	id := messages.ChunkMsgID(j.DocID, j.Index, j.Version)
	if j.Gen > 0 {
		id += ":r" + strconv.Itoa(j.Gen)
	}
	return id
}
