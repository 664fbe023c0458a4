package pipeline

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"os"
	"time"

	"github.com/sluicehq/sluice/pkg/classify"
	"github.com/sluicehq/sluice/pkg/vectorstore"
)

// Across processes, a text whose vector is not stored yet is claimed in
// the store (vectorstore.Claimer) before it is sent: a batch that finds
// its text claimed by another process waits for that process's vector
// instead of paying for the text again. Within a process, flights share
// the answer; claims cover what flights cannot see. A claim is released
// when its batch ends, and is a hint with a time to live (ClaimTTL),
// past which another process takes it over: a dead or stalled claimer
// delays the text's other chunks by at most that, and never loses one;
// a batch slower than that only has its texts paid for twice.

// Waiting for another process's vector polls the store, from
// firstClaimPoll doubling to lastClaimPoll.
const (
	firstClaimPoll = 20 * time.Millisecond
	lastClaimPoll  = 500 * time.Millisecond
	// claimQuietBatches is how many batches in a row that met no
	// repeated text a pipeline runs before it stops claiming: claims
	// cost two statements a batch, and a corpus that does not repeat
	// itself gains nothing from them. A batch that meets a repeat (a
	// stored vector, a twin, another batch's text) turns them on again.
	claimQuietBatches = 8
)

// noteRepeats records whether a batch met a repeated text.
func (p *Pipeline) noteRepeats(met bool) {
	if met {
		p.batchesWithoutRepeats.Store(0)
		return
	}
	p.batchesWithoutRepeats.Add(1)
}

// claiming reports whether a batch claims its texts: while the
// pipeline's recent batches, or this one (repeated), met repeats, and in
// its first claimQuietBatches batches, when nothing is known yet.
func (p *Pipeline) claiming(repeated bool) bool {
	return repeated || p.batchesWithoutRepeats.Load() < claimQuietBatches
}

// newClaimOwner names a pipeline's claims host:pid:random, so that an
// operator can tell whose claims they are, and a process started again
// with the same pid never takes its predecessor's claims for its own.
func newClaimOwner() string {
	host, _ := os.Hostname()
	b := make([]byte, 6)
	_, _ = rand.Read(b)
	return fmt.Sprintf("%s:%d:%s", host, os.Getpid(), hex.EncodeToString(b))
}

// claimAcross claims send's texts for this pipeline and returns the jobs
// whose text it now holds, to embed, and those whose text another
// process holds, to wait for, and whether it claimed anything to
// release. A text another process stored since the batch's lookup gets
// that vector, as a reused one. send holds one job per text; repeated
// says whether the batch met a repeated text already. A store that is
// no Claimer, or a pipeline not claiming, holds nothing back. A failed
// claim is a database error like the lookup's: the caller holds the
// batch.
func (p *Pipeline) claimAcross(ctx context.Context, send []*Job, repeated bool) (mine, elsewhere []*Job, claimed bool, err error) {
	c, ok := p.store.(vectorstore.Claimer)
	if !ok || len(send) == 0 || !p.claiming(repeated) {
		return send, nil, false, nil
	}
	p.sweepClaims(ctx)
	found, err := c.ClaimTexts(ctx, p.pool, p.claimOwner, p.cfg.Model, hashesOf(send), p.cfg.ClaimTTL)
	if err != nil {
		return nil, nil, false, fmt.Errorf("claim texts: %w", err)
	}
	mine, elsewhere = p.sortClaimed(send, found)
	return mine, elsewhere, true, nil
}

// sortClaimed gives the jobs whose text is stored its vector, as a
// reused one, and sorts the others into those whose text this pipeline
// claimed and those another process holds.
func (p *Pipeline) sortClaimed(jobs []*Job, found vectorstore.Claims) (mine, elsewhere []*Job) {
	for _, j := range jobs {
		if vec, ok := found.Stored[j.textHash]; ok {
			j.vector = vec
			p.reused.Inc()
			continue
		}
		if found.Elsewhere[j.textHash] {
			elsewhere = append(elsewhere, j)
		} else {
			mine = append(mine, j)
		}
	}
	return mine, elsewhere
}

// awaitElsewhere waits for the vectors of jobs, whose texts other
// processes claimed, polling the store with one statement that both
// looks their vectors up and claims those neither stored nor held any
// longer, and returns the jobs whose text this pipeline has claimed in
// the meantime, because their claimer released it or let it expire: the
// caller embeds those. It waits a little more than ClaimTTL at most,
// within ctx, so that every claim it waits on expires first unless its
// own process renews it; a job still waiting when ctx ends fails, to be
// retried by redelivery, when the vector will most likely be stored. A
// store that cannot be asked hands every job still waiting back, to be
// embedded here: paying twice is better than holding a batch on a hint.
func (p *Pipeline) awaitElsewhere(ctx context.Context, jobs []*Job) (claimed []*Job) {
	c, _ := p.store.(vectorstore.Claimer)
	if len(jobs) == 0 || c == nil {
		return jobs
	}
	// Every claim held when the wait began has expired before it ends.
	ctx, cancel := context.WithTimeout(ctx, p.cfg.ClaimTTL+2*lastClaimPoll)
	defer cancel()
	pending := jobs
	poll := time.NewTimer(firstClaimPoll)
	defer poll.Stop()
	for wait := firstClaimPoll; len(pending) > 0; wait = min(2*wait, lastClaimPoll) {
		select {
		case <-poll.C:
			poll.Reset(wait)
		case <-ctx.Done():
			for _, j := range pending {
				p.fail(j, StageEmbed, classify.Retryable(classify.ClassTimeout,
					fmt.Errorf("waiting for another process's vector of the same text: %w", context.Cause(ctx))))
			}
			return claimed
		}
		found, err := c.ClaimTexts(ctx, p.pool, p.claimOwner, p.cfg.Model, hashesOf(pending), p.cfg.ClaimTTL)
		if err != nil {
			p.log.Warn().Err(err).Int("texts", len(pending)).Msg("cannot claim the texts this batch waits for, or look them up; embedding them here")
			return append(claimed, pending...)
		}
		var mine []*Job
		mine, pending = p.sortClaimed(pending, found)
		claimed = append(claimed, mine...)
	}
	return claimed
}

// releaseClaims drops this pipeline's claims on the texts of jobs once
// their batch has committed or given up: a stored text's waiters find
// its vector, and an unstored one's take it over now rather than when
// the claim expires. A claim so outlives its batch only when its process
// dies. A failed release only leaves the claims to expire.
func (p *Pipeline) releaseClaims(ctx context.Context, jobs []*Job) {
	c, ok := p.store.(vectorstore.Claimer)
	if !ok || len(jobs) == 0 {
		return
	}
	// A stopping batch still releases; a database that does not answer
	// holds it no longer than a claim would.
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), p.cfg.ClaimTTL)
	defer cancel()
	if err := c.ReleaseTexts(ctx, p.pool, p.claimOwner, hashesOf(jobs)); err != nil {
		p.log.Warn().Err(err).Int("texts", len(jobs)).Msg("cannot release the claims of a finished batch; they expire on their own")
	}
}

// SweepClaims deletes the claims on texts past their time to live, its
// own and any other process's, every ClaimSweepEvery until ctx ends. A
// batch sweeps as it claims; this sweeps a quiet pipeline too, so that a
// claim whose release failed (its connection reset as the batch ended)
// is gone within a minute of expiring though no batch comes after it.
func (p *Pipeline) SweepClaims(ctx context.Context) {
	if _, ok := p.store.(vectorstore.Claimer); !ok {
		return
	}
	tick := time.NewTicker(p.cfg.ClaimSweepEvery)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			p.sweepClaims(ctx)
		}
	}
}

// sweepClaims deletes the claims past their time to live, at most once
// per ClaimSweepEvery by this pipeline's clock. A failed sweep is
// retried at the next.
func (p *Pipeline) sweepClaims(ctx context.Context) {
	now := p.now().UnixNano()
	last := p.lastClaimSweep.Load()
	if now-last < int64(p.cfg.ClaimSweepEvery) || !p.lastClaimSweep.CompareAndSwap(last, now) {
		return
	}
	if _, err := vectorstore.SweepTextClaims(ctx, p.pool, p.cfg.ClaimTTL); err != nil {
		p.log.Warn().Err(err).Msg("cannot sweep expired text claims; retrying at the next sweep")
		p.lastClaimSweep.Store(last)
	}
}

// hashesOf returns the text hashes of jobs, in order.
func hashesOf(jobs []*Job) []vectorstore.TextHash {
	hashes := make([]vectorstore.TextHash, len(jobs))
	for i, j := range jobs {
		hashes[i] = j.textHash
	}
	return hashes
}
