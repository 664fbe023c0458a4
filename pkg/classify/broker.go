package classify

import (
	"errors"
	"strconv"

	"github.com/nats-io/nats.go"
	"github.com/nats-io/nats.go/jetstream"
)

// JetStream API error codes with a disposition of their own, from
// nats-server's errors.json. Every other API error is classified by the
// HTTP-like status it carries (FromStatus).
const (
	// jsNoPeers: "no suitable peers for placement", while a node the
	// replicas need is not (yet) counted online.
	jsNoPeers jetstream.ErrorCode = 10005
	// jsUnavailable: "JetStream system temporarily unavailable", while the
	// meta group has no leader.
	jsUnavailable jetstream.ErrorCode = 10008
	// jsNotLeader: "JetStream cluster can not handle request", while
	// leadership changes.
	jsNotLeader jetstream.ErrorCode = 10009
	// jsStoreFailed: a message or stream could not be stored: a stream
	// full under DiscardNew (back-pressure), or a store just deleted still
	// on its way out of the server's directory.
	jsStoreFailed jetstream.ErrorCode = 10077
)

// brokerUnavailable are the NATS client's errors that mean no server
// answered: nobody listens on the subject yet, or the connection is
// down, on its way back or stale.
var brokerUnavailable = []error{
	nats.ErrNoResponders,
	jetstream.ErrNoStreamResponse,
	jetstream.ErrNoHeartbeat,
	nats.ErrConnectionClosed,
	nats.ErrConnectionReconnecting,
	nats.ErrDisconnected,
	nats.ErrStaleConnection,
	nats.ErrNoServers,
}

// brokerTimeouts are the NATS client's own deadlines.
var brokerTimeouts = []error{nats.ErrTimeout, jetstream.ErrAsyncPublishTimeout}

// fromBroker applies the rules for NATS and JetStream errors:
//
//   - A *jetstream.APIError (also inside jetstream's own sentinels, such
//     as ErrStreamNotFound) with one of the codes a cluster answers while
//     it settles (10005, 10008, 10009) or a store failure (10077, a full
//     stream): Retry, broker_unavailable or, for 10077, server_error.
//     Code "jetstream_<code>".
//   - Any other API error: FromStatus of the status it carries (404 for a
//     missing stream, consumer or message, 400 for a bad request, 503 for
//     JetStream not enabled), with Code "jetstream_<code>".
//   - nats.ErrTimeout or jetstream.ErrAsyncPublishTimeout: Retry, timeout.
//   - No responders, no stream response, a missed heartbeat, or a closed,
//     reconnecting, disconnected or stale connection: Retry,
//     broker_unavailable.
//   - nats.ErrMaxPayload: Quarantine, payload_too_large.
func fromBroker(err error) (Decision, bool) {
	if e, ok := errors.AsType[*jetstream.APIError](err); ok {
		code := "jetstream_" + strconv.Itoa(int(e.ErrorCode))
		switch e.ErrorCode {
		case jsNoPeers, jsUnavailable, jsNotLeader:
			return Decision{Disposition: Retry, Class: ClassBrokerUnavailable, Code: code}, true
		case jsStoreFailed:
			return Decision{Disposition: Retry, Class: ClassServerError, Code: code}, true
		}
		d := FromStatus(e.Code, "", 0)
		d.Code = code
		return d, true
	}
	for _, target := range brokerTimeouts {
		if errors.Is(err, target) {
			return Decision{Disposition: Retry, Class: ClassTimeout}, true
		}
	}
	for _, target := range brokerUnavailable {
		if errors.Is(err, target) {
			return Decision{Disposition: Retry, Class: ClassBrokerUnavailable}, true
		}
	}
	if errors.Is(err, nats.ErrMaxPayload) {
		return Decision{Disposition: Quarantine, Class: ClassPayloadTooLarge}, true
	}
	return Decision{}, false
}
