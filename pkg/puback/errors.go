package puback

import "errors"

// ErrGone means JetStream deduplicated a publish but the first copy it
// named is no longer in the stream: the message is not published. Publish
// it under a new Nats-Msg-Id, or again once the stream's duplicate window
// has passed.
var ErrGone = errors.New("deduplicated publish whose first copy is gone from the stream: publish it under a new Nats-Msg-Id")
