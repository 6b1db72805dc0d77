package tcu

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/qgtc/qgtc/bittensor"
	"github.com/qgtc/qgtc/bmm"
)

// TestUploadRing: uploads queue their copies without waiting, each from a
// pinned buffer of the ring, reused once its copy has run. Twenty-four
// uploads (six rounds of the ring) of growing and shrinking sizes (the
// slots regrow) from one host slice overwritten right after each upload,
// a sum queued on each pair, all read back only at the end; then one
// upload past upRingMax (through the slots in upPiece pieces, the last
// one short). Every value is the one uploaded.
func TestUploadRing(t *testing.T) {
	k := gpuKernel(t)
	be, err := NewBackend(k)
	require.NoError(t, err)
	defer be.Close()
	sizes := []int{1, 7, 1 << 10, 300 << 10, 1 << 20, 3 << 20, 5 << 20, 5, 2 << 20, 9, 6 << 20, 1 << 18}
	host := make([]float32, 6<<20)
	var want [][]float32
	var sums []bmm.Vector
	for i, n := range sizes {
		var xy [2]bmm.Vector
		for h := range xy {
			v := host[:n]
			for j := range v {
				v[j] = float32(i*1000 + h*100000 + j%997)
			}
			if h == 0 {
				want = append(want, make([]float32, n))
			}
			for j := range v {
				want[i][j] += v[j]
			}
			xy[h], err = be.UploadVector(v)
			require.NoError(t, err, "upload %d of %d values", i, n)
			clear(v) // the upload took the values: the host may reuse its memory at once
		}
		s, err := be.NewVector(n)
		require.NoError(t, err)
		require.NoError(t, be.AddFloat(s, xy[0], xy[1], false))
		sums = append(sums, s)
		xy[0].Free() // freed before the sum ran: the pool reuses it only after
		xy[1].Free()
	}
	for i, s := range sums {
		got := make([]float32, s.Len())
		require.NoError(t, be.ReadVector(got, s), "sum %d", i)
		require.Equal(t, want[i], got, "sum %d of %d values", i, s.Len())
	}
	big := make([]float32, upRingMax/4+1024) // past the ring: in pieces
	for j := range big {
		big[j] = float32(j % 4099)
	}
	x, err := be.UploadVector(big)
	require.NoError(t, err)
	got := make([]float32, len(big))
	require.NoError(t, be.ReadVector(got, x))
	require.Equal(t, big, got)
}

// TestUploadRingFull: while callers hold every slot of the ring reserved,
// an upload, large or small, goes through the staging buffer and waits,
// with the values uploaded; a released slot is taken again.
func TestUploadRingFull(t *testing.T) {
	k := gpuKernel(t)
	be, err := NewBackend(k)
	require.NoError(t, err)
	defer be.Close()
	var held []*upSlot
	var extra *upSlot
	require.NoError(t, be.d.run(func() error {
		for range upSlots {
			s, err := be.d.reserve(1 << 20)
			if err != nil {
				return err
			}
			held = append(held, s)
		}
		extra, err = be.d.reserve(1 << 20)
		return err
	}))
	require.Nil(t, extra, "a slot beyond the ring")
	for _, n := range []int{1000, fillHere} { // filled in device work; by the caller
		v := make([]float32, n)
		for j := range v {
			v[j] = float32(j%4099 + n)
		}
		x, err := be.UploadVector(v)
		require.NoError(t, err)
		got := make([]float32, n)
		require.NoError(t, be.ReadVector(got, x))
		require.Equal(t, v, got, "%d values", n)
	}
	require.NoError(t, be.d.run(func() error {
		be.d.release(held[2])
		extra, err = be.d.reserve(1 << 20)
		return err
	}))
	require.Same(t, held[2], extra)
}

// TestStagedUploads: operands staged on one backend (a host worker's) and
// uploaded by another (a device's) hold, byte for byte, what plain uploads
// hold: a block-sparse A with its zero-tile lists, and an edge list with
// weights and heavy rows. A graph staged over other source rows is not
// taken; Unstage gives back what no upload took; the pinned buffers go
// back to the pool once their copies have run.
func TestStagedUploads(t *testing.T) {
	k := gpuKernel(t)
	worker, err := NewBackend(k)
	require.NoError(t, err)
	defer worker.Close()
	dev, err := NewBackend(k)
	require.NoError(t, err)
	defer dev.Close()
	r := rand.New(rand.NewPCG(8, 1))
	a := blockSparse(t, r, 6000, 1000, 3, bittensor.DefaultPadding)
	g := randomGraph(r, 20000, 30000, 150, 3)
	aSize, gp := prepBits(a, true).r.size, mustPrepGraph(t, g, 30000)
	require.GreaterOrEqual(t, aSize, fillHere)
	require.GreaterOrEqual(t, gp.r.size, fillHere)
	require.Positive(t, gp.g.nHeavy)

	plainA, err := dev.UploadBits(a)
	require.NoError(t, err)
	plainG, err := dev.UploadGraph(g, 30000)
	require.NoError(t, err)
	worker.StageBits(a)
	worker.StageGraph(g, 30000)
	for _, op := range []any{a, g} {
		_, ok := staged.Load(op)
		require.True(t, ok, "%T staged", op)
	}
	stA, err := dev.UploadBits(a)
	require.NoError(t, err)
	stG, err := dev.UploadGraph(g, 30000)
	require.NoError(t, err)
	for _, op := range []any{a, g} {
		_, ok := staged.Load(op)
		assert.False(t, ok, "%T still staged after its upload", op)
	}
	pa, sa := plainA.(*devBits), stA.(*devBits)
	assert.Equal(t, peek(t, dev, &pa.devMem, aSize), peek(t, dev, &sa.devMem, aSize), "A's words and lists")
	require.Len(t, sa.lists, len(pa.lists))
	for h, l := range pa.lists {
		base := uint64(pa.buf.ptr)
		assert.Equal(t, [2]uint64{l[0] - base + uint64(sa.buf.ptr), l[1] - base + uint64(sa.buf.ptr)}, sa.lists[h], "list of height %d", h)
	}
	pg, sg := plainG.(*devGraph), stG.(*devGraph)
	assert.Equal(t, peek(t, dev, &pg.devMem, gp.r.size), peek(t, dev, &sg.devMem, gp.r.size), "the edge list")
	assert.Equal(t, pg.nHeavy, sg.nHeavy)
	assert.Equal(t, pg.heavy-uint64(pg.buf.ptr), sg.heavy-uint64(sg.buf.ptr))

	// Other source rows: the plain path, and the staged buffer goes back.
	worker.StageGraph(g, 30000)
	other, err := dev.UploadGraph(g, 30001)
	require.NoError(t, err)
	assert.Equal(t, 30001, other.(*devGraph).src)
	_, ok := staged.Load(g)
	assert.False(t, ok)
	worker.StageBits(a)
	worker.Unstage(a)
	_, ok = staged.Load(a)
	assert.False(t, ok)
	// peek waited for the stream: the next sweep finds every copy done.
	require.NoError(t, dev.d.run(func() error { return dev.d.sweepStaged(false) }))
	assert.Empty(t, dev.d.stagedCopies)
}

func mustPrepGraph(t *testing.T, g *bmm.Graph, src int) *graphPrep {
	p, err := prepGraph(g, src)
	require.NoError(t, err)
	return p
}
