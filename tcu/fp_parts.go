package tcu

// FeatGraph's hybrid partitioning for the device SpMM: the rows are
// grouped by a node partition (one dimension) and the feature axis is cut
// into tiles (the other). A block owns one part at one tile and stages the
// part's source rows of that tile in shared memory, so the edges inside
// the part are served from there and only the cut edges gather from L2 or
// HBM. The tiles of a group of parts run one after the other, with the
// group sized so that its rows of one tile fit half the L2: on a graph too
// large for the L2 the cut edges then mostly hit it too.

import (
	"fmt"
	"os"
	"strconv"
	"strings"

	"github.com/qgtc/qgtc/templates"
)

// fpPartMax bounds the rows of a staged piece; a larger part of the
// caller's partition is cut into pieces of at most this many of its nodes,
// in order.
const fpPartMax = 512

// fpTileMax is the widest feature tile of the partitioned SpMM: a piece's
// tile is at most fpPartMax·fpTileMax floats of shared memory (64 KiB).
const fpTileMax = 32

// fpPartBlock is the threads of a block of fp_spmm_part.
const fpPartBlock = 512

// fpInsideMin is the share of edges inside the pieces below which staging
// does not pay: the partitioned SpMM then runs the row kernel with the rows
// in part order, which keeps the partition's locality in the L2 only.
const fpInsideMin = 1.0 / 3

// fpParts is a graph's partition layout on the device.
type fpParts struct {
	order, start, loc *Buffer
	sizes             []int32 // rows per piece, host side (the call's items)
	maxPiece          int
	inside            float64 // share of the edges whose ends share a piece
}

// partLayout orders g's nodes by part (stable in node id) and cuts each
// part into pieces of at most fpPartMax: order lists the nodes piece by
// piece, start[i] is piece i's first position in order (start has a last
// entry, len(order)), and loc[pos], for the edge at position pos of the
// CSR, is its source's slot in the row's piece, or -1 when the source is
// in another piece. g must be square (its sources are its rows).
func partLayout(g templates.CSR, parts []int32, k int) (order, start, loc []int32, err error) {
	n := g.Rows()
	if len(parts) != n {
		return nil, nil, nil, fmt.Errorf("%w: partition of %d nodes for a graph of %d rows", ErrShape, len(parts), n)
	}
	if k < 1 || k > max(n, 1) {
		return nil, nil, nil, fmt.Errorf("%w: %d parts for %d nodes", ErrShape, k, n)
	}
	count := make([]int32, k+1)
	for v, p := range parts {
		if p < 0 || int(p) >= k {
			return nil, nil, nil, fmt.Errorf("%w: node %d is in part %d, want 0..%d", ErrShape, v, p, k-1)
		}
		count[p+1]++
	}
	for p := 0; p < k; p++ {
		count[p+1] += count[p]
	}
	order = make([]int32, n)
	fill := append([]int32(nil), count[:k]...)
	for v, p := range parts {
		order[fill[p]] = int32(v)
		fill[p]++
	}
	piece := make([]int32, n) // piece of node v
	slot := make([]int32, n)  // v's position in its piece
	start = make([]int32, 0, n/fpPartMax+k+1)
	for p := 0; p < k; p++ {
		for i := count[p]; i < count[p+1]; i++ {
			if (i-count[p])%fpPartMax == 0 {
				start = append(start, i)
			}
			v := order[i]
			piece[v], slot[v] = int32(len(start)-1), (i-count[p])%fpPartMax
		}
	}
	start = append(start, int32(n))
	loc = make([]int32, g.NNZ())
	for v := 0; v < n; v++ {
		for pos := g.Indptr[v]; pos < g.Indptr[v+1]; pos++ {
			loc[pos] = -1
			if u := g.Indices[pos]; piece[u] == piece[v] {
				loc[pos] = slot[u]
			}
		}
	}
	return order, start, loc, nil
}

// partItems lists the (piece, tile) pairs of a partitioned SpMM in launch
// order: the pieces are taken in groups of at most groupRows rows, and each
// group runs its tiles one after the other.
func partItems(start []int32, tiles, groupRows int) []int32 {
	pieces := len(start) - 1
	items := make([]int32, 0, 2*pieces*tiles)
	for g0 := 0; g0 < pieces; {
		g1, rows := g0, 0
		for g1 < pieces && (g1 == g0 || rows+int(start[g1+1]-start[g1]) <= groupRows) {
			rows += int(start[g1+1] - start[g1])
			g1++
		}
		for t := 0; t < tiles; t++ {
			for p := g0; p < g1; p++ {
				items = append(items, int32(p), int32(t))
			}
		}
		g0 = g1
	}
	return items
}

// UploadCSRParts is UploadCSR for a square graph (its sources are its rows)
// with a partition of its nodes into k parts (parts[v] in 0..k-1, e.g. a
// subgraph.Partitioning's Parts): SpMMs whose message reads x[u] then run
// partitioned (see the top of this file). Results equal UploadCSR's: each
// row still reduces its edges in order. Few cut edges make it fast; the
// partition's quality is the caller's.
func (d *Device) UploadCSRParts(g templates.CSR, parts []int32, k int) (*FPGraph, error) {
	if err := g.Validate(g.Rows()); err != nil {
		return nil, err
	}
	order, start, loc, err := partLayout(g, parts, k)
	if err != nil {
		return nil, err
	}
	fg, err := d.uploadChecked(g, g.Rows(), g.NNZ(), nil, fpHeavy, fpChunk)
	if err != nil {
		return nil, err
	}
	fg.parts = &fpParts{sizes: make([]int32, len(start)-1)}
	for i := range fg.parts.sizes {
		fg.parts.sizes[i] = start[i+1] - start[i]
		fg.parts.maxPiece = max(fg.parts.maxPiece, int(fg.parts.sizes[i]))
	}
	in := 0
	for _, l := range loc {
		if l >= 0 {
			in++
		}
	}
	fg.parts.inside = float64(in) / float64(max(len(loc), 1))
	err = d.run(func() error {
		for _, u := range []struct {
			dst  **Buffer
			data []int32
		}{{&fg.parts.order, order}, {&fg.parts.start, start}, {&fg.parts.loc, loc}} {
			var err error
			if *u.dst, err = d.upload(asBytes(u.data)); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil {
		fg.Close()
		return nil, err
	}
	return fg, nil
}

// Pieces is the number of pieces of a partitioned graph and the share of
// its edges inside one (0, 0 when the graph was uploaded without a
// partition). Below a third the SpMM keeps the part order but does not
// stage.
func (g *FPGraph) Pieces() (pieces int, inside float64) {
	if g.parts == nil {
		return 0, 0
	}
	return len(g.parts.sizes), g.parts.inside
}

// close frees the layout's device memory.
func (p *fpParts) close() error {
	if p == nil {
		return nil
	}
	var first error
	for _, b := range []**Buffer{&p.order, &p.start, &p.loc} {
		if err := (*b).Free(); err != nil && first == nil {
			first = err
		}
		*b = nil
	}
	return first
}

// EXPERIMENT (removed before landing): QGTC_FP_PART_EXP="block=N,tile=N".
var expBlock, expTile = func() (int, int) {
	b, t := fpPartBlock, fpTileMax
	for _, kv := range strings.Split(os.Getenv("QGTC_FP_PART_EXP"), ",") {
		k, v, _ := strings.Cut(kv, "=")
		n, _ := strconv.Atoi(v)
		switch k {
		case "block":
			b = n
		case "tile":
			t = n
		}
	}
	return b, t
}()

// partGeom is the geometry of fp_spmm_part at width f: one tile of at most
// fpTileMax columns per block, as many tiles as cover f.
func partGeom(f int) fpGeom {
	gm := geomFor(min(f, expTile), f, 1)
	tw := gm.g * gm.vw * gm.r
	gm.tiles = (f + tw - 1) / tw
	return gm
}

// prepareParts adds the partitioned launches of an SpMM to c. With pieces
// that hold enough of the edges: their light rows by fp_spmm_part, the
// heavy rows' chunks by fp_spmm (no light rows) and their merge, all from
// the module built for one tile. Else the row kernel at its own geometry,
// its light rows visited in part order.
func (d *Device) prepareParts(out *Buffer, g *FPGraph, a SpMMArgs, ew int, rowScale bool) (*FPCall, error) {
	f, fe := a.F, max(a.FE, 1)
	stage := g.parts.inside >= fpInsideMin
	gm := geomFor(f, f, fpMaxSlots)
	if stage {
		gm = partGeom(f)
	}
	tw := gm.g * gm.vw * gm.r
	src, err := spmmSource(a.Msg, a.Reduce, ew, g.eids != nil, rowScale, gm)
	if err != nil {
		return nil, err
	}
	c := &FPCall{d: d, what: spmmWhat(a, fe, gm, g) + fmt.Sprintf(" pieces=%d inside=%.2f staged=%v", len(g.parts.sizes), g.parts.inside, stage)}
	fns, err := d.fpFunctions("fp_spmm.cu", src, "fp_spmm", "fp_spmm_combine", "fp_spmm_part")
	if err != nil {
		return nil, err
	}
	var items []int32
	if stage {
		start := make([]int32, len(g.parts.sizes)+1)
		for i, s := range g.parts.sizes {
			start[i+1] = start[i] + s
		}
		items = partItems(start, gm.tiles, max(1, d.info.L2Bytes/2/(4*tw)))
	}
	err = d.run(func() error {
		var err error
		if g.nchunks > 0 {
			if c.scratch, err = d.alloc(4 * g.nchunks * f); err != nil {
				return err
			}
		}
		rows, order := g.rows, ptrOf(g.parts.order)
		if stage {
			rows, order = 0, 0 // fp_spmm runs the chunks only
			if len(items) > 0 {
				ib, err := d.upload(asBytes(items))
				if err != nil {
					return err
				}
				c.extra = append(c.extra, ib)
				c.launches = append(c.launches, fpLaunch{fn: fns[2], grid: [3]uint32{uint32(len(items) / 2), 1, 1},
					block: uint32(expBlock), smem: g.parts.maxPiece * tw * 4,
					params: []uint64{ptrOf(g.indptr), ptrOf(g.indices), ptrOf(g.eids), ptrOf(a.X), ptrOf(a.E), ptrOf(a.Y), ptrOf(out),
						ptrOf(g.parts.order), ptrOf(g.parts.start), ptrOf(g.parts.loc), ptrOf(ib), uint64(f), uint64(fe), uint64(g.heavy), ptrOf(g.scale)}})
			}
		}
		if g.nchunks+rows > 0 {
			c.launches = append(c.launches, fpLaunch{fn: fns[0], grid: gm.grid(g.nchunks + rows),
				params: []uint64{ptrOf(g.indptr), ptrOf(g.indices), ptrOf(g.eids), ptrOf(a.X), ptrOf(a.E), ptrOf(a.Y), ptrOf(out),
					ptrOf(c.scratch), ptrOf(g.chunks), uint64(g.nchunks), uint64(rows), uint64(f), uint64(fe), uint64(g.heavy), ptrOf(g.scale), order}})
		}
		if g.nheavy > 0 {
			c.launches = append(c.launches, fpLaunch{fn: fns[1], grid: gm.grid(g.nheavy),
				params: []uint64{ptrOf(g.heavyRows), uint64(g.nheavy), ptrOf(g.indptr), ptrOf(c.scratch), ptrOf(out), uint64(f), ptrOf(g.scale)}})
		}
		return nil
	})
	if err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}
