package safetensors

import (
	"bytes"
	"encoding/binary"
	"math"
	"runtime"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// stFile assembles a safetensors file by hand from a header and data.
func stFile(header string, data []byte) []byte {
	var b bytes.Buffer
	binary.Write(&b, binary.LittleEndian, uint64(len(header)))
	b.WriteString(header)
	b.Write(data)
	return b.Bytes()
}

func f32le(v ...float32) []byte { return f32Bytes(v) }

func TestDTypes(t *testing.T) {
	f64 := make([]byte, 16)
	binary.LittleEndian.PutUint64(f64, math.Float64bits(1.5))
	binary.LittleEndian.PutUint64(f64[8:], math.Float64bits(-2))
	cases := []struct {
		dtype string
		data  []byte
		want  []float32
	}{
		{"F32", f32le(1.5, -2), []float32{1.5, -2}},
		{"F64", f64, []float32{1.5, -2}},
		{"F16", []byte{0x00, 0x3e, 0x00, 0xc0}, []float32{1.5, -2}},
		{"BF16", []byte{0xc0, 0x3f, 0x00, 0xc0}, []float32{1.5, -2}},
	}
	for _, c := range cases {
		t.Run(c.dtype, func(t *testing.T) {
			got, err := (&Tensor{DType: c.dtype, Shape: []int{2}, Data: c.data}).Float32s()
			require.NoError(t, err)
			assert.Equal(t, c.want, got)
		})
	}
	_, err := (&Tensor{DType: "I64", Shape: []int{1}, Data: make([]byte, 8)}).Float32s()
	assert.ErrorIs(t, err, ErrFormat)
}

func TestReadErrors(t *testing.T) {
	ok := `{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`
	cases := map[string][]byte{
		"empty":          {},
		"short length":   {1, 0, 0},
		"huge header":    {0, 0, 0, 0, 0, 0, 0, 1},
		"short header":   stFile(ok, nil)[:20],
		"not json":       stFile(`{"a":`, nil),
		"not object":     stFile(`[1,2]`, nil),
		"null":           stFile(`null`, nil),
		"bad dtype":      stFile(`{"a":{"dtype":"F33","shape":[2],"data_offsets":[0,8]}}`, f32le(1, 2)),
		"no shape":       stFile(`{"a":{"dtype":"F32","data_offsets":[0,8]}}`, f32le(1, 2)),
		"negative dim":   stFile(`{"a":{"dtype":"F32","shape":[-2],"data_offsets":[0,8]}}`, f32le(1, 2)),
		"size mismatch":  stFile(`{"a":{"dtype":"F32","shape":[3],"data_offsets":[0,8]}}`, f32le(1, 2)),
		"reversed":       stFile(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[8,0]}}`, f32le(1, 2)),
		"short data":     stFile(ok, f32le(1)),
		"trailing bytes": stFile(ok, f32le(1, 2, 3)),
		"gap":            stFile(`{"a":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`, f32le(1, 2)),
		"overlap": stFile(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]},"b":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}}`,
			f32le(1, 2)),
		"unknown field": stFile(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8],"x":1}}`, f32le(1, 2)),
		"bad metadata":  stFile(`{"__metadata__":{"k":1}}`, nil),
		"overflow":      stFile(`{"a":{"dtype":"F32","shape":[4294967296,4294967296],"data_offsets":[0,0]}}`, nil),
	}
	for name, file := range cases {
		t.Run(name, func(t *testing.T) {
			_, _, err := Read(bytes.NewReader(file))
			assert.ErrorIs(t, err, ErrFormat)
		})
	}
	ts, meta, err := Read(bytes.NewReader(stFile(`{"__metadata__":{"k":"v"},`+ok[1:], f32le(1, 2))))
	require.NoError(t, err)
	assert.Equal(t, map[string]string{"k": "v"}, meta)
	assert.Equal(t, []int{2}, ts["a"].Shape)
}

// FuzzRead: any input either fails with ErrFormat or
// parses into tensors that survive a write/read round trip unchanged.
func FuzzRead(f *testing.F) {
	f.Add(stFile(`{"a":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}}`, f32le(1, 2)))
	f.Add(stFile(`{"__metadata__":{"k":"v"},"b":{"dtype":"I64","shape":[],"data_offsets":[0,8]},"a":{"dtype":"BF16","shape":[1,2],"data_offsets":[8,12]}}`, make([]byte, 12)))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, data []byte) {
		ts, meta, err := Read(bytes.NewReader(data))
		if err != nil {
			require.ErrorIs(t, err, ErrFormat)
			return
		}
		var buf bytes.Buffer
		require.NoError(t, Write(&buf, ts, meta))
		ts2, meta2, err := Read(&buf)
		require.NoError(t, err)
		require.Equal(t, len(ts), len(ts2))
		for k, v := range ts {
			require.Equal(t, v.DType, ts2[k].DType)
			require.Equal(t, v.Data, ts2[k].Data)
			require.Equal(t, len(v.Shape), len(ts2[k].Shape))
		}
		if len(meta) > 0 {
			require.Equal(t, meta, meta2)
		}
	})
}

// TestReadBoundsClaims: a header that claims 16 GiB of data over a file of
// 16 bytes is refused after reading those bytes, having allocated about
// what the file holds, not what its header claims.
func TestReadBoundsClaims(t *testing.T) {
	file := stFile(`{"a":{"dtype":"F64","shape":[2147483647],"data_offsets":[0,17179869176]}}`, f32le(1, 2, 3, 4))
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	_, _, err := Read(bytes.NewReader(file))
	runtime.ReadMemStats(&after)
	require.ErrorIs(t, err, ErrFormat)
	assert.Less(t, after.TotalAlloc-before.TotalAlloc, uint64(1<<20), "bytes allocated reading a 16-byte data section")
}
