package pipeline

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/sluicehq/sluice/internal/provider/embedder"
	"github.com/sluicehq/sluice/internal/provider/tokens"
	"github.com/sluicehq/sluice/pkg/classify"
)

// embed sends the jobs to the embedder in sub-batches bounded by count,
// size and tokens, and sets each job's vector or failure. A job over the
// model's context length fails here, before any request.
func (p *Pipeline) embed(ctx context.Context, jobs []*Job) {
	jobs = p.withinContext(jobs)
	start, size, toks := 0, 0, 0
	for i, j := range jobs {
		n := len(j.chunk.Text)
		// The length is a bound on the tokens: no token is shorter than a
		// byte. Counting is needed only once the bound passes the cap.
		t := n
		if toks+t > p.cfg.EmbedMaxTokens {
			t = p.tokens.Count(j.chunk.Text)
		}
		if i > start && (i-start >= p.cfg.EmbedMaxInputs || size+n > p.cfg.EmbedMaxBytes || toks+t > p.cfg.EmbedMaxTokens) {
			p.embedUnvetted(ctx, jobs[start:i])
			start, size, toks = i, 0, 0
		}
		size, toks = size+n, toks+t
	}
	if start < len(jobs) {
		p.embedUnvetted(ctx, jobs[start:])
	}
}

// withinContext fails the jobs over the model's context length as
// context_length_exceeded, a permanent class, and returns the others.
func (p *Pipeline) withinContext(jobs []*Job) []*Job {
	var kept []*Job
	over := false
	for i, j := range jobs {
		if tokens.AtMost(p.tokens, j.chunk.Text, p.cfg.MaxInputTokens) {
			if over {
				kept = append(kept, j)
			}
			continue
		}
		if !over {
			kept, over = append(make([]*Job, 0, len(jobs)), jobs[:i]...), true
		}
		p.fail(j, StageEmbed, classify.Permanent(classify.ClassContextLength, fmt.Errorf(
			"chunk holds %d tokens (%s), over the model's context length of %d: chunk with a smaller CHUNK_SIZE",
			p.tokens.Count(j.chunk.Text), p.tokens.Encoding(), p.cfg.MaxInputTokens)))
	}
	if !over {
		return jobs
	}
	return kept
}

// embedUnvetted embeds jobs that no answer has vouched for yet. While the
// embedder rejects inputs often, they go out side by side in requests
// sized to the recent rejection rate (see rejectionRate), so that each
// rejection costs a resend of a few inputs rather than of the rest of
// the batch; while rejections are rare they go out as one request.
func (p *Pipeline) embedUnvetted(ctx context.Context, jobs []*Job) {
	size := p.rejections.requestSize(len(jobs))
	if size >= len(jobs) {
		p.embedGroup(ctx, jobs, false)
		return
	}
	var wg sync.WaitGroup
	for _, piece := range pieces(jobs, size) {
		wg.Go(func() { p.embedGroup(ctx, piece, false) })
	}
	wg.Wait()
}

// embedGroup embeds one request's worth of jobs. A rejection that blames
// one input parks just that input, and the inputs before and after it go
// out again (see embedAround); a data error for a multi-input request
// is bisected until the bad input stands alone; anything else fails the
// whole group, to be retried by redelivery. An ambiguous answer to a
// multi-input request is bisected too, but only once it would park one of
// its inputs: until then the request is retried whole, so an embedder
// that answers everything ambiguously costs no extra requests, and at the
// end only the inputs still answered ambiguously on their own are parked.
// vouched says an earlier answer examined every input of group and
// rejected none, so this answer tells the rejection rate nothing new.
func (p *Pipeline) embedGroup(ctx context.Context, group []*Job, vouched bool) {
	texts := make([]string, len(group))
	for i, j := range group {
		texts[i] = j.chunk.Text
	}
	p.crash("mid-embed")
	start := time.Now()
	vecs, err := p.emb.Embed(ctx, texts)
	if cause := context.Cause(ctx); err != nil && errors.Is(cause, errSoftTimeLimit) {
		err = classify.Retryable(classify.ClassSoftTimeLimit, fmt.Errorf("embed stage passed the %w: %w", cause, err))
	}
	d := classify.Classify(err)
	outcome := "ok"
	if err != nil {
		outcome = string(d.Disposition)
	}
	p.metrics.observeEmbed(outcome, time.Since(start))
	var inputErr *embedder.InputError
	blamed := errors.As(err, &inputErr) && inputErr.Index >= 0 && inputErr.Index < len(group)
	if !vouched {
		switch {
		case err == nil:
			p.rejections.observe(len(group), 0)
		case blamed:
			p.rejections.observe(inputErr.Index+1, 1)
		}
	}
	if err == nil {
		if len(vecs) != len(group) {
			err = classify.Retryable(classify.ClassServerError, fmt.Errorf("embedder returned %d vectors for %d inputs", len(vecs), len(group)))
			for _, j := range group {
				p.fail(j, StageEmbed, err)
			}
			return
		}
		for i, j := range group {
			j.vector = vecs[i]
		}
		p.providerInputs.Add(float64(len(group)))
		p.providerTokens.Add(float64(tokens.Sum(p.tokens, texts)))
		return
	}
	if blamed {
		p.embedAround(ctx, group, inputErr.Index, inputErr.Err)
		return
	}
	if len(group) > 1 && (classify.IsDataError(err) || d.Disposition == classify.Ambiguous && p.parksAny(group, d)) {
		// The halves go out side by side: a poisoned batch then costs
		// about log₂(n) round trips of latency instead of n.
		p.metrics.Bisections.Inc()
		half := len(group) / 2
		var wg sync.WaitGroup
		wg.Go(func() { p.embedGroup(ctx, group[:half], false) })
		p.embedGroup(ctx, group[half:], false)
		wg.Wait()
		return
	}
	for _, j := range group {
		p.fail(j, StageEmbed, err)
	}
}

// embedAround fails group[i], which the embedder blamed with err, and
// embeds the rest. The inputs before i are not at fault (the embedder
// blames the lowest), so they go out on their own beside those after it,
// which are still unvetted: a second bad input further on then fails
// only those after i, or only their piece of them.
func (p *Pipeline) embedAround(ctx context.Context, group []*Job, i int, err error) {
	p.fail(group[i], StageEmbed, err)
	var wg sync.WaitGroup
	if i > 0 {
		wg.Go(func() { p.embedGroup(ctx, group[:i], true) })
	}
	if i+1 < len(group) {
		p.embedUnvetted(ctx, group[i+1:])
	}
	wg.Wait()
}

// parksAny reports whether failing the group with d would park any of it.
func (p *Pipeline) parksAny(group []*Job, d classify.Decision) bool {
	for _, j := range group {
		if !p.route(j, d).retry {
			return true
		}
	}
	return false
}
