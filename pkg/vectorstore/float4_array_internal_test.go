package vectorstore

import (
	"bytes"
	"math"
	"math/rand/v2"
	"testing"

	"github.com/jackc/pgx/v5/pgtype"
)

// RegisterTypes must send the very bytes pgx's own codec sends, only
// faster.
func TestRegisteredFloat4ArrayEncodesAsPgxDoes(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 4))
	vec := make(float4Array, 3*384)
	for i := range vec {
		vec[i] = float32(rng.NormFloat64())
	}
	vec[0], vec[1], vec[2] = 0, float32(math.Copysign(0, -1)), math.MaxFloat32
	for _, v := range []float4Array{vec, {}, {1.5}} {
		plain := pgtype.NewMap()
		want, err := plain.Encode(pgtype.Float4ArrayOID, pgtype.BinaryFormatCode, v, nil)
		if err != nil {
			t.Fatal(err)
		}
		fast := pgtype.NewMap()
		registerTypes(fast)
		if _, ok := fast.PlanEncode(pgtype.Float4ArrayOID, pgtype.BinaryFormatCode, v).(encodeFloat4Array); !ok {
			t.Fatal("RegisterTypes did not take over float4Array")
		}
		got, err := fast.Encode(pgtype.Float4ArrayOID, pgtype.BinaryFormatCode, v, nil)
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, want) {
			t.Fatalf("%d floats: registered codec wrote %d bytes, pgx %d; first difference at %d", len(v), len(got), len(want), firstDiff(got, want))
		}
	}
	// Other float4[] values keep pgx's codec.
	fast := pgtype.NewMap()
	registerTypes(fast)
	if _, err := fast.Encode(pgtype.Float4ArrayOID, pgtype.BinaryFormatCode, []float32{1, 2}, nil); err != nil {
		t.Fatalf("[]float32 no longer encodes: %v", err)
	}
}

func firstDiff(a, b []byte) int {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return i
		}
	}
	return min(len(a), len(b))
}

func BenchmarkEncodeFloat4Array(b *testing.B) {
	m := pgtype.NewMap()
	registerTypes(m)
	vec := make(float4Array, 64*384)
	b.SetBytes(int64(8 * len(vec)))
	var buf []byte
	for b.Loop() {
		var err error
		if buf, err = m.Encode(pgtype.Float4ArrayOID, pgtype.BinaryFormatCode, vec, buf[:0]); err != nil {
			b.Fatal(err)
		}
	}
}
