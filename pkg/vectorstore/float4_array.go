package vectorstore

import (
	"context"
	"encoding/binary"
	"math"
	"slices"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// float4Array is a one-dimensional float4[] parameter: every vector of a
// batch, flattened. pgx encodes it element by element through its generic
// array codec; RegisterTypes replaces that with one loop over the slice,
// which was a fifth of a consumer's CPU. Without RegisterTypes the generic
// codec still encodes it, without boxing an element (Index hands out
// pointers into the slice), and the float32 → float64 → float32 detour
// through Float64Valuer is exact.
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

// RegisterTypes teaches conn to send the store's vectors to PostgreSQL in
// one pass; other float4[] values keep pgx's own codec. It has the shape
// of pgxpool.Config.AfterConnect, which is where a pool that writes
// vectors should call it.
func RegisterTypes(_ context.Context, conn *pgx.Conn) error {
	registerTypes(conn.TypeMap())
	return nil
}

func registerTypes(m *pgtype.Map) {
	elem, ok := m.TypeForOID(pgtype.Float4OID)
	if !ok {
		return
	}
	m.RegisterType(&pgtype.Type{Name: "_float4", OID: pgtype.Float4ArrayOID,
		Codec: float4ArrayCodec{&pgtype.ArrayCodec{ElementType: elem}}})
}

// float4ArrayCodec is pgx's float4[] codec, but for a float4Array in
// binary, which it writes itself.
type float4ArrayCodec struct{ *pgtype.ArrayCodec }

// PlanEncode implements pgtype.Codec.
func (c float4ArrayCodec) PlanEncode(m *pgtype.Map, oid uint32, format int16, value any) pgtype.EncodePlan {
	if _, ok := value.(float4Array); ok && format == pgtype.BinaryFormatCode {
		return encodeFloat4Array{}
	}
	return c.ArrayCodec.PlanEncode(m, oid, format, value)
}

// encodeFloat4Array writes PostgreSQL's binary array format: dimensions,
// no nulls, element type float4, one dimension of len(a) from 1, then each
// element as a 4-byte length and its IEEE 754 bits, big-endian.
type encodeFloat4Array struct{}

// Encode implements pgtype.EncodePlan.
func (encodeFloat4Array) Encode(value any, buf []byte) ([]byte, error) {
	a := value.(float4Array)
	if a == nil {
		return nil, nil
	}
	start := len(buf)
	buf = slices.Grow(buf, 20+8*len(a))[:start+20+8*len(a)]
	out := buf[start:]
	for i, v := range []uint32{1, 0, pgtype.Float4OID, uint32(len(a)), 1} {
		binary.BigEndian.PutUint32(out[4*i:], v)
	}
	out = out[20:]
	for i, f := range a {
		binary.BigEndian.PutUint32(out[8*i:], 4)
		binary.BigEndian.PutUint32(out[8*i+4:], math.Float32bits(f))
	}
	return buf, nil
}
