package embedder_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/sluicehq/sluice/internal/dev/embedsim"
	"github.com/sluicehq/sluice/internal/provider/embedder"
)

// BenchmarkOpenAIEmbed measures a 64-input batch against an in-process
// embedsim, client and server together.
func BenchmarkOpenAIEmbed(b *testing.B) {
	inputs := make([]string, 64)
	for i := range inputs {
		inputs[i] = fmt.Sprintf("chunk %d of a document about rivers, mountains and the sea, long enough to be a realistic paragraph of text for an embedding model", i)
	}
	for _, enc := range []string{embedder.EncodingBase64, embedder.EncodingFloat} {
		b.Run(enc, func(b *testing.B) {
			sim, err := embedsim.New(embedsim.Config{Dims: 384, MaxRecords: -1})
			if err != nil {
				b.Fatal(err)
			}
			if err := sim.Start("127.0.0.1:0"); err != nil {
				b.Fatal(err)
			}
			b.Cleanup(func() { _ = sim.Close() })
			c, err := embedder.NewOpenAI(embedder.Config{URL: sim.URL(), Model: "m", Dims: 384, Encoding: enc})
			if err != nil {
				b.Fatal(err)
			}
			b.ReportAllocs()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if _, err := c.Embed(context.Background(), inputs); err != nil {
						b.Error(err)
						return
					}
				}
			})
		})
	}
}
