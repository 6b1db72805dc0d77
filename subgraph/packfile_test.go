package subgraph

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"os"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// memWriter is a PackFileWriter in memory.
type memWriter struct{ buf []byte }

func (m *memWriter) Write(p []byte) (int, error) { m.buf = append(m.buf, p...); return len(p), nil }
func (m *memWriter) WriteAt(p []byte, off int64) (int, error) {
	return copy(m.buf[off:], p), nil
}

// packFileFixture writes the fixture's batches with features and scales
// and returns the file's bytes and what went in.
func packFileFixture(t testing.TB) ([]byte, PackFileInfo, []PackFileBatch) {
	g, p := batchFixture(t)
	feat := randomFeatures(t, g.N(), 70, 3)
	bp, err := Batches(g, p, BatchOptions{PartsPerBatch: 3, Rows: BandRows, SelfLoops: true})
	require.NoError(t, err)
	info := PackFileInfo{Nodes: g.N(), FeatureCodes: 1234, Scales: true, Batches: bp.Len(), FeatCols: 70, QBits: 3,
		QScale: 0.5, QLower: -0.25, Data: [16]byte{1, 2}, Partition: [16]byte{3, 4}, ScaleMode: "sqrt"}
	var in []PackFileBatch
	w := &memWriter{}
	require.NoError(t, WritePackedBatches(w, &info, func(i int) (PackFileBatch, error) {
		b, err := bp.Batch(i)
		if err != nil {
			return PackFileBatch{}, err
		}
		buf, err := b.Pack(feat)
		if err != nil {
			return PackFileBatch{}, err
		}
		sc := make([]float32, len(b.Nodes))
		for j, v := range b.Nodes {
			sc[j] = float32(v) / 7
		}
		in = append(in, PackFileBatch{Packed: buf, Nodes: b.Nodes, Scale: sc})
		return in[i], nil
	}))
	return w.buf, info, in
}

func writePackTemp(t *testing.T, data []byte) string {
	path := filepath.Join(t.TempDir(), "b.qgpb")
	require.NoError(t, os.WriteFile(path, data, 0o644))
	return path
}

func TestPackFileRoundTrip(t *testing.T) {
	data, info, in := packFileFixture(t)
	require.Greater(t, len(in), 1)
	for _, src := range []string{"mmap", "read"} {
		t.Run(src, func(t *testing.T) {
			pf, err := OpenPackedBatches(writePackTemp(t, data))
			require.NoError(t, err)
			defer pf.Close()
			if src == "read" {
				pf.src.close()
				f, err := os.Open(pf.path)
				require.NoError(t, err)
				pf.src = readSource{f}
			}
			assert.Equal(t, info, pf.Info)
			// Backwards: a batch is read without the ones before it.
			for i := pf.Len() - 1; i >= 0; i-- {
				p, b, err := pf.Batch(i)
				require.NoError(t, err)
				assert.Equal(t, in[i].Packed, b.Packed)
				assert.Equal(t, in[i].Nodes, b.Nodes)
				assert.Equal(t, in[i].Scale, b.Scale)
				assert.Equal(t, len(in[i].Nodes), p.Nodes)
				pf.Release(i)
			}
			_, _, err = pf.Batch(pf.Len())
			assert.ErrorIs(t, err, ErrPackFile)
		})
	}
}

func TestPackFileCrafted(t *testing.T) {
	good, _, _ := packFileFixture(t)
	le := binary.LittleEndian
	resum := func(b []byte) { // a crafted file with a valid header checksum
		nb := le.Uint32(b[32:])
		end := packFileHeader + packFileEntry*int(nb)
		if end > len(b) {
			return
		}
		le.PutUint32(b[52:], 0)
		le.PutUint32(b[52:], crc32Castagnoli(b[:end]))
	}
	entry := packFileHeader // batch 0's table entry
	cases := map[string]func(b []byte) []byte{
		"truncated header":  func(b []byte) []byte { return b[:100] },
		"truncated batch":   func(b []byte) []byte { return b[:len(b)-PackFilePage-1] },
		"bad magic":         func(b []byte) []byte { b[0] = 'X'; return b },
		"header bit flip":   func(b []byte) []byte { b[20] ^= 1; return b },
		"huge batch count":  func(b []byte) []byte { le.PutUint32(b[32:], 1<<30); resum(b); return b },
		"table past end":    func(b []byte) []byte { le.PutUint32(b[32:], MaxPackFileBatches); resum(b); return b },
		"huge nodes":        func(b []byte) []byte { le.PutUint64(b[16:], 1<<40); resum(b); return b },
		"nodes not covered": func(b []byte) []byte { le.PutUint64(b[16:], 1<<30); resum(b); return b },
		"offset past end": func(b []byte) []byte {
			le.PutUint64(b[entry:], uint64(len(b)+PackFilePage)&^(PackFilePage-1))
			resum(b)
			return b
		},
		"unaligned offset": func(b []byte) []byte { le.PutUint64(b[entry:], le.Uint64(b[entry:])+8); resum(b); return b },
		"length past end":  func(b []byte) []byte { le.PutUint64(b[entry+8:], 1<<62); resum(b); return b },
		"overlap": func(b []byte) []byte {
			le.PutUint64(b[entry+packFileEntry:], le.Uint64(b[entry:]))
			resum(b)
			return b
		},
		"huge batch nodes": func(b []byte) []byte { le.PutUint32(b[entry+16:], 1<<30); resum(b); return b },
		"bad flags":        func(b []byte) []byte { le.PutUint32(b[12:], 64); resum(b); return b },
	}
	for name, craft := range cases {
		t.Run(name, func(t *testing.T) {
			_, err := OpenPackedBatches(writePackTemp(t, craft(bytes.Clone(good))))
			require.Error(t, err)
			assert.NotContains(t, err.Error(), "\n")
		})
	}
	// Damage inside a batch passes the open and fails that batch's first read only.
	b := bytes.Clone(good)
	off := le.Uint64(b[entry+packFileEntry:]) // batch 1
	b[off+70] ^= 0x10
	pf, err := OpenPackedBatches(writePackTemp(t, b))
	require.NoError(t, err)
	defer pf.Close()
	_, _, err = pf.Batch(0)
	require.NoError(t, err)
	_, _, err = pf.Batch(1)
	require.ErrorIs(t, err, ErrPackFile)
	assert.Contains(t, err.Error(), "batch 1: ")
	assert.Contains(t, err.Error(), "checksum")
}

func FuzzOpenPackedBatches(f *testing.F) {
	good, _, _ := packFileFixture(f)
	f.Add(good)
	f.Add(good[:packFileHeader+packFileEntry])
	// One file per fuzzing process, rewritten for each input: a temporary
	// folder per input would cost more than the parse.
	path := filepath.Join(f.TempDir(), fmt.Sprintf("in-%d.qgpb", os.Getpid()))
	open := func(t *testing.T, data []byte) {
		require.NoError(t, os.WriteFile(path, data, 0o644))
		pf, err := OpenPackedBatches(path)
		if err != nil {
			return
		}
		defer pf.Close()
		for i := range pf.Len() { // none of it may panic
			if p, _, err := pf.Batch(i); err == nil {
				p.Adjacency()
				p.Features()
			}
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		open(t, data)
		// Again with the checksums made right, so that mutations reach the
		// checks behind them.
		open(t, fixChecksums(bytes.Clone(data)))
	})
}

func crc32Castagnoli(b []byte) uint32 { return crc32.Checksum(b, castagnoli) }

// fixChecksums sets the header's and every in-range batch's CRC-32C to
// what the bytes hold, as a crafted file would.
func fixChecksums(b []byte) []byte {
	if len(b) < packFileHeader {
		return b
	}
	le := binary.LittleEndian
	nb := int64(le.Uint32(b[32:]))
	end := packFileHeader + packFileEntry*nb
	if end > int64(len(b)) {
		return b
	}
	for i := int64(0); i < nb; i++ {
		e := b[packFileHeader+packFileEntry*i:]
		off, length := le.Uint64(e[0:]), le.Uint64(e[8:])
		if off <= uint64(len(b)) && length <= uint64(len(b))-off {
			le.PutUint32(e[20:], crc32Castagnoli(b[off:off+length]))
		}
	}
	le.PutUint32(b[52:], 0)
	le.PutUint32(b[52:], crc32Castagnoli(b[:end]))
	return b
}
