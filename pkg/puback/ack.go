package puback

// Ack is what became of one published message.
type Ack struct {
	// MsgID is the Nats-Msg-Id the message was last published under:
	// its own, or the one RepublishGone gave it.
	MsgID string
	// Seq is the message's sequence in the stream: for a duplicate, the
	// first copy's. It is meaningful only when Err is nil.
	Seq uint64
	// Duplicate says JetStream deduplicated the publish; the first copy
	// was found still in the stream.
	Duplicate bool
	// Err is why the message is not in the stream: the server refused
	// it, no PubAck came back, ctx ended first, or ErrGone.
	Err error
}
