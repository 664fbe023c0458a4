package runs

import (
	"fmt"
	"time"
)

// Facts are what settling a run reads: its own row, the database's
// clock, and its chunks counted in the manifest.
type Facts struct {
	// Status is the run's status now.
	Status Status
	// PublishFinished is whether the producer recorded the end of its
	// publishing (publish_finished_at).
	PublishFinished bool
	// LastBeat is the producer's last heartbeat; zero if it never beat.
	LastBeat time.Time
	// HeartbeatTimeout is how long the producer may stay silent before
	// it counts as gone.
	HeartbeatTimeout time.Duration
	// Now is the database's clock, the one heartbeats are stamped with.
	Now time.Time
	// Published is how many chunks the producer had published by its
	// last heartbeat.
	Published int
	// Pending and Parked count the run's chunks in the manifest.
	Pending, Parked int
}

// ProducerGone reports whether the run's producer has been silent for
// longer than its heartbeat timeout, or never beat.
func (f Facts) ProducerGone() bool {
	return f.LastBeat.IsZero() || f.Now.Sub(f.LastBeat) > f.HeartbeatTimeout
}

// Settlement is the status a run's facts call for.
type Settlement struct {
	Status Status
	// Ended is whether the run has ended (finished_at is set).
	Ended bool
	// Reason says why, for a run that becomes Interrupted; empty
	// otherwise.
	Reason string
}

// Settle decides a run's status from its facts. An operator's decision
// (halted, cancelled), a failure the producer recorded, and an
// interruption stand, and end once nothing of the run is pending. A run
// with chunks pending is running. Otherwise a run whose producer finished
// publishing is completed, with failures when any chunk is parked, and a
// run whose producer is gone before it finished is interrupted: what it
// published is settled, and a later run of the source publishes the rest.
func Settle(f Facts) Settlement {
	switch f.Status {
	case Halted, Cancelled, Failed, Interrupted:
		return Settlement{Status: f.Status, Ended: f.Pending == 0}
	}
	switch {
	case f.Pending > 0:
		return Settlement{Status: Running}
	case f.PublishFinished && f.Parked > 0:
		return Settlement{Status: CompletedWithFailures, Ended: true}
	case f.PublishFinished:
		return Settlement{Status: Completed, Ended: true}
	case f.ProducerGone():
		return Settlement{Status: Interrupted, Ended: true, Reason: interruption(f)}
	}
	return Settlement{Status: Running}
}

// interruption says what became of an interrupted run, and what to do.
func interruption(f Facts) string {
	heard := "never heard from"
	if !f.LastBeat.IsZero() {
		heard = "last heard from at " + f.LastBeat.UTC().Format(time.RFC3339)
	}
	return fmt.Sprintf("its producer stopped before it finished publishing (%s, having published %d chunks, all of them settled); run the producer again on the same source to publish the rest",
		heard, f.Published)
}
