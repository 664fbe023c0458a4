package messages_test

import (
	"strings"
	"testing"

	"github.com/sluicehq/sluice/pkg/messages"
)

// A typical chunk: about 2 KB of text and a little metadata.
func benchJob(b *testing.B) messages.ChunkJob {
	return newJob(b, strings.Repeat("Lorem ipsum dolor sit amet. ", 70), `{"title":"Go","lang":"en","page":12,"tags":["a","b"]}`)
}

func BenchmarkChunkJobEncode(b *testing.B) {
	j := benchJob(b)
	b.ReportAllocs()
	for b.Loop() {
		if _, err := j.Encode(); err != nil {
			b.Fatal(err)
		}
	}
}

func BenchmarkDecodeChunkJob(b *testing.B) {
	data := mustEncode(b, benchJob(b))
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := messages.DecodeChunkJob(data); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkDecodeChunkJobLines is a chunk of prose with line breaks and
// quotes, whose text has escapes on the wire.
func BenchmarkDecodeChunkJobLines(b *testing.B) {
	data := mustEncode(b, newJob(b, strings.Repeat("The keeper said \"open the gate\".\n\tThen the water rose.\n", 40), `{"title":"Go","lang":"en"}`))
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		if _, err := messages.DecodeChunkJob(data); err != nil {
			b.Fatal(err)
		}
	}
}
