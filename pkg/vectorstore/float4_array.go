package vectorstore

import "github.com/jackc/pgx/v5/pgtype"

// float4Array is a one-dimensional float4[] parameter. pgx encodes a plain
// []float32 in binary too, but boxes every element into an interface on the
// way, one allocation per float: 24,576 for a batch of 64 vectors of 384.
// Handing out pointers into the slice instead costs none, and the
// float32 → float64 → float32 detour through Float64Valuer is exact.
type float4Array []float32

var _ pgtype.ArrayGetter = float4Array(nil)

// Dimensions implements pgtype.ArrayGetter.
func (a float4Array) Dimensions() []pgtype.ArrayDimension {
	if a == nil {
		return nil
	}
	return []pgtype.ArrayDimension{{Length: int32(len(a)), LowerBound: 1}}
}

// Index implements pgtype.ArrayGetter.
func (a float4Array) Index(i int) any { return (*float4)(&a[i]) }

// IndexType implements pgtype.ArrayGetter.
func (a float4Array) IndexType() any { return new(float4) }

// float4 is one element of a float4Array.
type float4 float32

var _ pgtype.Float64Valuer = (*float4)(nil)

// Float64Value implements pgtype.Float64Valuer.
func (f *float4) Float64Value() (pgtype.Float8, error) {
	return pgtype.Float8{Float64: float64(*f), Valid: true}, nil
}
