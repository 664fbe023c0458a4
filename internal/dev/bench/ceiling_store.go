package bench

import (
	"context"
	"math"
	"math/rand/v2"

	"github.com/sluicehq/sluice/pkg/vectorstore"
)

// postgresCeiling is PostgreSQL alone: the consumer's batched
// vectorstore Upsert, batchSize rows per statement on concurrency
// connections, into a fresh database migrated for ceilingDims.
func (r *runner) postgresCeiling(ctx context.Context, jobs []benchJob) (ceilingRep, error) {
	db, err := r.in.freshDB(ctx, ceilingDims)
	if err != nil {
		return ceilingRep{}, err
	}
	defer db.drop()
	store, err := vectorstore.Open(ctx, db.pool, ceilingDims)
	if err != nil {
		return ceilingRep{}, err
	}
	rng := rand.New(rand.NewPCG(r.cfg.Seed, 7))
	rows := make([]vectorstore.Record, len(jobs))
	for i, j := range jobs {
		rows[i] = vectorstore.Record{DocID: j.job.DocID, ChunkIndex: j.job.ChunkIndex, Version: j.job.DocVersion, ContentHash: j.job.ContentHash,
			Model: simModel, Embedding: unitVector(rng, ceilingDims), Text: j.job.Text, Metadata: j.job.Metadata}
	}
	// Connections are opened outside the timing, as a running consumer's are.
	if err := warmPool(ctx, db, concurrency); err != nil {
		return ceilingRep{}, err
	}
	meter := readCPU()
	elapsed, err := inBatches(len(rows), func(lo, hi int) error {
		_, err := store.Upsert(ctx, db.pool, rows[lo:hi])
		return err
	})
	if err != nil {
		return ceilingRep{}, err
	}
	return ceilingRep{rate: float64(len(rows)) / elapsed.Seconds(), cpu: meter.since()}, nil
}

func unitVector(rng *rand.Rand, dims int) []float32 {
	v := make([]float32, dims)
	for i := range v {
		v[i] = float32(rng.NormFloat64())
	}
	return normalize(v)
}

// normalize scales v to unit length, in place, and returns it.
func normalize(v []float32) []float32 {
	var norm float64
	for _, x := range v {
		norm += float64(x) * float64(x)
	}
	norm = math.Sqrt(norm)
	for i := range v {
		v[i] = float32(float64(v[i]) / norm)
	}
	return v
}

// warmPool opens n connections in the pool.
func warmPool(ctx context.Context, db *database, n int) error {
	conns := make([]interface{ Release() }, 0, n)
	defer func() {
		for _, c := range conns {
			c.Release()
		}
	}()
	for range n {
		c, err := db.pool.Acquire(ctx)
		if err != nil {
			return err
		}
		conns = append(conns, c)
	}
	return nil
}
