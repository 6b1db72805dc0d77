package tcu

import (
	"fmt"
	"math"

	"github.com/qgtc/qgtc/bittensor"
	"github.com/qgtc/qgtc/bmm"
)

// epiAddrs resolves an epilogue's vectors for an m×n output: device
// addresses in Prob's order (ColScale, RowTerm, ColTerm, ColConst,
// RowScale, ColBias; 0 skips a step) and ReLU.
func (be *Backend) epiAddrs(ep *bmm.Epi, m, n int) (addrs [6]uint64, relu bool, err error) {
	if ep == nil {
		return addrs, false, nil
	}
	if (ep.RowTerm == nil) != (ep.ColTerm == nil) {
		return addrs, false, fmt.Errorf("%w: epilogue RowTerm and ColTerm must be set together", bmm.ErrShape)
	}
	names := [6]string{"ColScale", "RowTerm", "ColTerm", "ColConst", "RowScale", "ColBias"}
	for i, v := range [6]bmm.Vector{ep.ColScale, ep.RowTerm, ep.ColTerm, ep.ColConst, ep.RowScale, ep.ColBias} {
		if v == nil {
			continue
		}
		dv, err := be.vector(v)
		if err != nil {
			return addrs, false, fmt.Errorf("epilogue %s: %w", names[i], err)
		}
		want := n
		if i == 1 || i == 4 {
			want = m
		}
		if dv.n != want {
			return addrs, false, fmt.Errorf("%w: epilogue %s has %d entries, want %d", bmm.ErrShape, names[i], dv.n, want)
		}
		addrs[i] = dv.ptr()
	}
	return addrs, ep.ReLU, nil
}

// product checks the operands of A·B and returns M, N.
func (be *Backend) product(a, b bmm.Bits) (da, db *devBits, m, n int, err error) {
	if da, err = be.bitsOf(a); err != nil {
		return
	}
	if db, err = be.bitsOf(b); err != nil {
		return
	}
	if da.packing != bittensor.ByRows || db.packing != bittensor.ByCols {
		err = fmt.Errorf("%w: A must be packed by rows and B by columns, got %v and %v", bmm.ErrPacking, da.packing, db.packing)
		return
	}
	if da.cols != db.rows {
		err = fmt.Errorf("%w: A is %d×%d, B is %d×%d", bmm.ErrShape, da.rows, da.cols, db.rows, db.cols)
		return
	}
	return da, db, da.rows, db.cols, nil
}

// planes is planes [p0, p0+bits) of a resident tensor: the operand of one
// plane-group product (planes lie one after the other, so a group is an
// address and a width).
type planes struct {
	t        *devBits
	p0, bits int
}

func whole(t *devBits) planes { return planes{t, 0, t.bits} }

func (p planes) ptr() uint64 { return p.t.ptr() + uint64(8*p.p0*p.t.lay.planeWords()) }

// mulLaunch queues the mma.sync product of resident operands into out
// (mode modeFloat: float32 row-major; modeBit: dst's planes, zeroed
// first): the launch Kernel.prepare makes for one job, with device
// addresses for every operand and no copy at all: the descriptor is a
// kernel parameter. Device work only.
func (be *Backend) mulLaunch(mode int, out uint64, dst *devBits, qbits int, a, b planes, ep [6]uint64, relu bool, rq bmm.Requant) error {
	m, n := a.t.rows, b.t.cols
	if mode == modeBit {
		if err := be.zeroOut(dst); err != nil {
			return err
		}
	}
	if m == 0 || n == 0 {
		return nil
	}
	// fits16 false: the wide path sums int32 outputs.
	l := launch{abits: a.bits, bbits: b.bits, m: m, n: n, ksteps: a.t.lay.lw / stepWords, nprob: 1, mode: mode,
		allInt: mode == modeInt, anyBit: mode == modeBit, byRows: mode == modeBit && dst.packing == bittensor.ByRows}
	tu := be.k.tune
	tu.oneprob = 1 // the descriptor by value, whatever the kernel's tuning
	cfg := chooseConfig(l, be.k.target(), tu)
	if cfg.oneprob != 1 {
		return fmt.Errorf("tcu: internal: the product launch %v does not take its descriptor by value", cfg)
	}
	// The variant's function, looked up once: Device.function hashes the
	// whole source for its key on every call (bench/scale/RESULTS.md).
	fn := be.mulFns[cfg]
	if fn == 0 {
		src, hdrs := kernelSource("bmm_mma.cu")
		f, err := be.d.function("bmm_mma.cu", src, hdrs, cfg.opts(), "bmm_mma")
		if err != nil {
			return err
		}
		if be.mulFns == nil {
			be.mulFns = map[config]uintptr{}
		}
		be.mulFns[cfg], fn = f, f
	}
	p := prob{
		A: a.ptr(), B: b.ptr(), Out: out,
		ColScale: ep[0], RowTerm: ep[1], ColTerm: ep[2], ColConst: ep[3], RowScale: ep[4], ColBias: ep[5],
		APlane: int64(2 * a.t.lay.planeWords()), BPlane: int64(2 * b.t.lay.planeWords()),
		M: int32(m), N: int32(n), Lw32: int32(2 * a.t.lay.lw), ALines: int32(a.t.lay.lines), BLines: int32(b.t.lay.lines),
		Mode: int32(mode), ReLU: b2i(relu),
	}
	// A list of every plane's non-zero steps covers any group of planes.
	if l, ok := a.t.lists[cfg.bm]; ok {
		p.Kptr, p.Kidx = l[0], l[1]
	}
	switch mode {
	case modeBit:
		p.OutBits, p.OutByCols = int32(dst.bits), b2i(dst.packing == bittensor.ByCols)
		p.OutLw32, p.OutPlane = int32(2*dst.lay.lw), int64(2*dst.lay.planeWords())
		p.RqScale, p.RqOffset = rq.Scale, rq.Offset
	case modeCodes:
		p.OutBits, p.RqScale, p.RqOffset = int32(qbits), rq.Scale, rq.Offset
	}
	desc, blocks, err := packLaunch([]prob{p}, cfg.bm, cfg.bn)
	if err != nil {
		return err
	}
	// The descriptor travels in the launch's parameters (ONEPROB): no
	// device memory, no copy. nprobs 1: the kernel reads no block map.
	p1 := probParams(desc)
	params := append([]uint64{0, 1}, p1[:]...)
	// One wave of blocks, each taking every grid-th tile (ONEPROB), where
	// tiles cost alike: a dense A, or at most two k-steps a tile; the
	// hardware's own scheduling balances the uneven tiles of long sparse
	// products better than a fixed stride.
	if p.Kptr == 0 || l.ksteps <= 2 {
		resident, err := be.d.residentBlocks(fn, cfg.threads(), cfg.smem(mode))
		if err != nil {
			return err
		}
		blocks = min(blocks, resident)
	}
	if err := be.queued(); err != nil {
		return err
	}
	if be.kp.on {
		if err := be.kernelBegin("bmm_mma "+cfg.String(), blocks, cfg.threads()); err != nil {
			return err
		}
	}
	if err := be.d.launch(fn, [3]uint32{uint32(blocks), 1, 1}, [3]uint32{uint32(cfg.threads()), 1, 1}, cfg.smem(mode), be.d.stream, params...); err != nil {
		return err
	}
	return be.kernelEnd()
}

// MulBit implements bmm.Backend.
func (be *Backend) MulBit(dst bmm.Bits, a, b bmm.Bits, ep *bmm.Epi, rq bmm.Requant) error {
	be.setOp("MulBit")
	da, db, m, n, err := be.product(a, b)
	if err != nil {
		return err
	}
	dd, err := be.bitsOf(dst)
	if err != nil {
		return err
	}
	if dd.rows != m || dd.cols != n {
		return fmt.Errorf("%w: destination is %d×%d, product is %d×%d", bmm.ErrShape, dd.rows, dd.cols, m, n)
	}
	eps, relu, err := be.epiAddrs(ep, m, n)
	if err != nil {
		return err
	}
	return be.d.run(func() error { return be.mul(outBits, dd.ptr(), dd, dd.bits, da, db, eps, relu, rq) })
}

// MulFloat implements bmm.Backend.
func (be *Backend) MulFloat(dst bmm.Vector, a, b bmm.Bits, ep *bmm.Epi) error {
	be.setOp("MulFloat")
	da, db, m, n, err := be.product(a, b)
	if err != nil {
		return err
	}
	dv, err := be.vector(dst)
	if err != nil {
		return err
	}
	if dv.n != m*n {
		return fmt.Errorf("%w: destination has %d values, product is %d×%d", bmm.ErrShape, dv.n, m, n)
	}
	eps, relu, err := be.epiAddrs(ep, m, n)
	if err != nil {
		return err
	}
	return be.d.run(func() error { return be.mul(outFloat, dv.ptr(), nil, 0, da, db, eps, relu, bmm.Requant{}) })
}

// MulCodes implements bmm.Backend (see mul): the codes are those MulBit
// packs, the same epilogue value through the same quantizer.
func (be *Backend) MulCodes(dst bmm.Codes, a, b bmm.Bits, ep *bmm.Epi, rq bmm.Requant) error {
	be.setOp("MulCodes")
	da, db, m, n, err := be.product(a, b)
	if err != nil {
		return err
	}
	dc, err := be.codes(dst)
	if err != nil {
		return err
	}
	if dc.rows != m || dc.cols != n {
		return fmt.Errorf("%w: destination is %d×%d, product is %d×%d", bmm.ErrShape, dc.rows, dc.cols, m, n)
	}
	eps, relu, err := be.epiAddrs(ep, m, n)
	if err != nil {
		return err
	}
	return be.d.run(func() error { return be.mul(outCodes, dc.ptr(), nil, dc.bits, da, db, eps, relu, rq) })
}

// Output modes of agg.cu's agg and wideout.
const (
	outFloat = 0
	outCodes = 1
	outBits  = 2
)

// mul queues ep(A·B) into out as float32 (outFloat), byte codes of
// qbits (outCodes) or dst's planes (outBits). A product that fits int32
// is one mma.sync launch (codes too: MODE_CODES quantizes in its
// epilogue); a wider one is summed from int32 products of plane groups on
// the device, exactly as bmm.WideProduct: in int64 while
// K·(2^a−1)·(2^b−1) < 2^62, else in float64, then wideout. Device work
// only.
func (be *Backend) mul(mode int, out uint64, dst *devBits, qbits int, a, b *devBits, ep [6]uint64, relu bool, rq bmm.Requant) error {
	m, n, k := a.rows, b.cols, a.cols
	if bmm.MaxSum(k, a.bits, b.bits) <= math.MaxInt32 {
		switch mode {
		case outFloat:
			return be.mulLaunch(modeFloat, out, nil, 0, whole(a), whole(b), ep, relu, rq)
		case outBits:
			return be.mulLaunch(modeBit, out, dst, 0, whole(a), whole(b), ep, relu, rq)
		}
		// The codes straight from the epilogue: the float MulFloat writes,
		// through the quantizer MulBit packs with, one launch.
		return be.mulLaunch(modeCodes, out, nil, qbits, whole(a), whole(b), ep, relu, rq)
	}
	if err := be.zeroOut(dst); err != nil {
		return err
	}
	if m*n == 0 {
		return nil
	}
	ga, gb := bmm.PlaneGroups(k, a.bits, b.bits)
	exact := bmm.MaxSum(k, a.bits, b.bits) < math.Exp2(62)
	bufs, err := be.d.alloc(12 * m * n) // the sums (8 bytes each), then one group's products
	if err != nil {
		return err
	}
	defer be.d.pool.put(bufs.ptr) // reused only by work queued after wideout
	acc, part := uint64(bufs.ptr), uint64(bufs.ptr)+uint64(8*m*n)
	if err := be.d.memset32(bufs.ptr, 0, 2*m*n); err != nil {
		return err
	}
	for i0 := 0; i0 < a.bits; i0 += ga {
		for j0 := 0; j0 < b.bits; j0 += gb {
			pa, pb := planes{a, i0, min(ga, a.bits-i0)}, planes{b, j0, min(gb, b.bits-j0)}
			if err := be.mulLaunch(modeInt, part, nil, 0, pa, pb, [6]uint64{}, false, rq); err != nil {
				return err
			}
			if err := be.launch("widen", be.gridFor(m*n), 256, part, acc, uint64(m*n), uint64(b2i(exact)), uint64(i0+j0)); err != nil {
				return err
			}
		}
	}
	byCols, lw32, plane32 := outLayout(dst)
	return be.launch("wideout", be.gridFor(m*n), 256, acc, uint64(b2i(exact)), uint64(m), uint64(n), uint64(mode), out,
		ep[0], ep[1], ep[2], ep[3], ep[4], ep[5], uint64(b2i(relu)), f32bits(rq.Scale), f32bits(rq.Offset),
		uint64(qbits), uint64(byCols), uint64(lw32), uint64(plane32))
}

// gridFor is the blocks of 256 threads of an element-wise kernel over n
// values (grid-stride loops past a few waves).
func (be *Backend) gridFor(n int) int { return min((n+255)/256, 32*be.d.info.SMs) }

// aggregate checks G·X into a rows×cols output and queues agg.cu's kernel:
// codes of qbits for outCodes, dst's planes (qbits of them) for outBits.
func (be *Backend) aggregate(mode int, o uint64, rows, cols, qbits int, dst *devBits, g bmm.GraphOperand, x bmm.Codes, ep *bmm.Epi, rq bmm.Requant) error {
	dg, err := be.graph(g)
	if err != nil {
		return err
	}
	dx, err := be.codes(x)
	if err != nil {
		return err
	}
	if dx.rows != dg.src || rows != dg.rows || cols != dx.cols {
		return fmt.Errorf("%w: graph of %d rows over %d sources, X is %d×%d, destination %d×%d", bmm.ErrShape, dg.rows, dg.src, dx.rows, dx.cols, rows, cols)
	}
	if dg.maxDeg*dg.maxWeight*(1<<dx.bits-1) > math.MaxInt32 {
		return fmt.Errorf("%w: a row of %d entries of weight up to %d over %d-bit codes", bmm.ErrOverflow, dg.maxDeg, dg.maxWeight, dx.bits)
	}
	eps, relu, err := be.epiAddrs(ep, rows, cols)
	if err != nil {
		return err
	}
	byCols, lw32, plane32 := outLayout(dst)
	return be.d.run(func() error {
		// Planes packed by rows are written whole, padding included; by
		// columns, rows OR their bits into words they share.
		if dst != nil && (dst.packing == bittensor.ByCols || cols == 0) {
			if err := be.zeroOut(dst); err != nil {
				return err
			}
		}
		if cols == 0 {
			return nil
		}
		// Light rows a group of lanes each on unweighted graphs only: the
		// groups' paths add unweighted pair sums (weighted rows there did
		// not pay: bench/e2e/RESULTS.md, fifteenth round). Rows past
		// aggHeavyDeg take blocks of their own.
		lg, split := aggLanes(cols, aggLaneWidth(cols), dx.bits, min(dg.maxDeg, aggHeavyDeg), dg.weights != 0)
		args := []uint64{aggHeavyDeg, dg.heavy, uint64(dg.nHeavy), dg.indptr, dg.indices, dg.weights, dx.ptr(),
			uint64(rows), uint64(cols), uint64(mode), o, eps[0], eps[1], eps[2], eps[3], eps[4], eps[5], uint64(b2i(relu)),
			f32bits(rq.Scale), f32bits(rq.Offset), uint64(qbits), uint64(byCols), uint64(lw32), uint64(plane32)}
		// One launch: blocks of 32 warps where a row is past aggHeavyWide
		// entries, of 8 otherwise; the light rows 32/2^lg a warp.
		warps, kernel := 8, "agg8"
		if dg.maxDeg > aggHeavyWide {
			warps, kernel = 32, "agg32"
		}
		if split {
			kernel += "s" // aggSplit's light rows
		}
		perBlock := warps << (5 - lg)
		grid := dg.nHeavy + (rows+perBlock-1)/perBlock
		op := be.kp.op
		queue := func(f aggFold) error {
			// Timed (KERNELS) under its own op, whichever queues it.
			defer be.setOp(be.kp.op)
			be.setOp(op)
			return be.launch(kernel, grid, 32*warps, append(args, f.sums, f.argOut, f.argIdx, uint64(f.argOff),
				uint64(aggPackLimit(dx.bits)), uint64(lg))...)
		}
		// Held where the op after may fold into it: RowSums of planes by
		// rows, an argmax of float rows no wider than a warp.
		switch {
		case mode == outBits && dst.packing == bittensor.ByRows:
			return be.d.hold(&heldLaunch{kind: heldAggBits, out: o, rows: rows, cols: cols, queue: queue})
		case mode == outFloat && cols <= 32:
			return be.d.hold(&heldLaunch{kind: heldAggFloat, out: o, rows: rows, cols: cols, queue: queue})
		}
		return queue(aggFold{})
	})
}

// aggLaneWidth is the columns a lane of agg.cu sums: 8 where rows are at
// least 64 wide and 8-byte aligned (code buffers start aligned), else 4.
func aggLaneWidth(cols int) int {
	if cols >= 64 && cols%8 == 0 {
		return 8
	}
	return 4
}

// aggLaneLg is log2 of the lanes agg.cu gives a light row of cols columns
// of an unweighted graph, v a lane: the fewest that cover the row, a group
// of them a row and 32/2^lg rows a warp up to 16 lanes; 5 (a warp a row)
// past that.
func aggLaneLg(cols, v int) int {
	lg := 0
	for v<<lg < cols {
		lg++
	}
	if lg > 4 {
		return 5
	}
	return lg
}

// aggSplitCols is the widest output whose light rows agg.cu splits by
// entries over a group of lanes (aggSplit) instead of by columns: a word
// a lane's codes, four words at most.
const aggSplitCols = 16

// aggLanes is agg.cu's laneLg and split for light rows of cols columns
// (the longest lightMax entries) over bits-bit codes, v a lane, weighted
// or not: a warp a row for weighted graphs (the groups' paths add
// unweighted pair sums); entries split over 8 lanes for outputs of at
// most aggSplitCols columns whose rows fit a pair (aggSplit); else
// aggLaneLg's groups.
func aggLanes(cols, v, bits int, lightMax int64, weighted bool) (lg int, split bool) {
	switch {
	case weighted:
		return 5, false
	case cols <= aggSplitCols && lightMax <= int64(aggPackLimit(bits)):
		return 3, true
	}
	return aggLaneLg(cols, v), false
}

// aggPackLimit is how many entries of bits-bit codes agg.cu's unweighted
// sums add into a 16-bit pair before widening it: (2^bits − 1) times it
// stays within 65535.
func aggPackLimit(bits int) int { return 65535 / (1<<bits - 1) }

// outLayout is the packing, line words and plane words (32-bit units) of
// a planes output dst for agg.cu's kernels; zeros without one.
func outLayout(dst *devBits) (byCols, lw32, plane32 int) {
	if dst == nil {
		return 0, 0, 0
	}
	return int(b2i(dst.packing == bittensor.ByCols)), 2 * dst.lay.lw, 2 * dst.lay.planeWords()
}

// zeroOut clears a planes output (nil: none) before a kernel ORs its bits
// in. Device work only.
func (be *Backend) zeroOut(dst *devBits) error {
	if dst == nil {
		return nil
	}
	if err := be.kernelBegin("memset", 0, 0); err != nil {
		return err
	}
	if err := be.d.memset32(dst.buf.ptr, 0, 2*dst.bits*dst.lay.planeWords()); err != nil {
		return err
	}
	return be.kernelEnd()
}

// AggBit implements bmm.Backend.
func (be *Backend) AggBit(dst bmm.Bits, g bmm.GraphOperand, x bmm.Codes, ep *bmm.Epi, rq bmm.Requant) error {
	be.setOp("AggBit")
	dd, err := be.bitsOf(dst)
	if err != nil {
		return err
	}
	return be.aggregate(outBits, dd.ptr(), dd.rows, dd.cols, dd.bits, dd, g, x, ep, rq)
}

// AggCodes implements bmm.Backend.
func (be *Backend) AggCodes(dst bmm.Codes, g bmm.GraphOperand, x bmm.Codes, ep *bmm.Epi, rq bmm.Requant) error {
	be.setOp("AggCodes")
	dc, err := be.codes(dst)
	if err != nil {
		return err
	}
	return be.aggregate(outCodes, dc.ptr(), dc.rows, dc.cols, dc.bits, nil, g, x, ep, rq)
}

// AggFloat implements bmm.Backend: dst holds rows·cols values, rows those
// of g.
func (be *Backend) AggFloat(dst bmm.Vector, g bmm.GraphOperand, x bmm.Codes, ep *bmm.Epi) error {
	be.setOp("AggFloat")
	dv, err := be.vector(dst)
	if err != nil {
		return err
	}
	dg, err := be.graph(g)
	if err != nil {
		return err
	}
	dx, err := be.codes(x)
	if err != nil {
		return err
	}
	if dv.n != dg.rows*dx.cols {
		return fmt.Errorf("%w: destination has %d values, G·X is %d×%d", bmm.ErrShape, dv.n, dg.rows, dx.cols)
	}
	return be.aggregate(outFloat, dv.ptr(), dg.rows, dx.cols, 0, nil, g, x, ep, bmm.Requant{})
}

// RowSums implements bmm.Backend: a warp per row of a (packed by rows).
func (be *Backend) RowSums(dst bmm.Vector, a bmm.Bits) error {
	be.setOp("RowSums")
	dv, err := be.vector(dst)
	if err != nil {
		return err
	}
	da, err := be.bitsOf(a)
	if err != nil {
		return err
	}
	if da.packing != bittensor.ByRows {
		return fmt.Errorf("%w: row sums of a tensor packed by %v", bmm.ErrPacking, da.packing)
	}
	if dv.n != da.rows {
		return fmt.Errorf("%w: row sums of a %d×%d tensor into %d values", bmm.ErrShape, da.rows, da.cols, dv.n)
	}
	return be.d.runKeepingHeld(func() error {
		// The codes' aggregation just before: its rows add them up as they
		// write them.
		folded, err := be.d.foldHeld(heldAggBits, da.ptr(), da.rows, da.cols, func(f *aggFold) { f.sums = dv.ptr() })
		if folded || err != nil {
			return err
		}
		const warps = 8
		rows := warps * 32 / rowsumsLanes(da.lay.lw) // a block's
		return be.launch("rowsums", (da.rows+rows-1)/rows, 32*warps, da.ptr(), dv.ptr(), uint64(da.rows), uint64(da.bits),
			uint64(da.lay.lw), uint64(da.lay.planeWords()))
	})
}

// rowsumsLanes is how many lanes of a warp the rowsums kernel gives a row
// of lw words: lw rounded up to a power of two, at most 32 (as the kernel
// computes it).
func rowsumsLanes(lw int) int {
	g := 1
	for g < lw && g < 32 {
		g <<= 1
	}
	return g
}

// The GPU cost model of PreferEdges, its rates fitted to whole passes
// (bench/e2e/RESULTS.md): the mma.sync product visits one batch's non-zero
// 64×256 adjacency tiles a plane of X and 8 output columns at a time; the
// edge list reads a byte per edge and column, gathered mostly from L2; and
// every launch over one batch costs the device a fixed time whatever its
// work, so one edge-list launch over every batch beats one dense product
// per batch. A pass that uploads what it aggregates over pays for the
// bytes at the host-to-device rate of a cold pass, and one that makes the
// features' code lists from their planes on the host for the time that
// takes its workers.
const (
	gpuDenseBitOpsPerSec = 2e14
	hostListSecPerCode   = 1e-9
	gpuEdgeBytesPerSec   = 1e12
	gpuLaunchSec         = 12e-6
	gpuCopyBytesPerSec   = 18e9
)

// PreferEdges implements bmm.Backend with the model above: the dense form
// launches once per batch, the edge list once.
func (be *Backend) PreferEdges(c bmm.AggCost) bool {
	dense := float64(c.DenseTiles)*64*256*float64(max(c.Bits, 1))*float64(c.Cols)/gpuDenseBitOpsPerSec +
		float64(max(c.Batches, 1))*gpuLaunchSec
	edges := float64(c.Edges)*float64(c.Cols)/gpuEdgeBytesPerSec + gpuLaunchSec
	if c.HostLists {
		edges += float64(c.Edges) * hostListSecPerCode
	}
	if c.Uploaded {
		dense += float64(c.DenseBytes) / gpuCopyBytesPerSec
		edges += 4 * float64(c.Edges+c.Rows+max(c.Batches, 1)) / gpuCopyBytesPerSec
	}
	return edges <= dense
}

// addOp checks x + y into a rows×cols output and queues agg.cu's add:
// codes of qbits for outCodes, dst's planes for outBits.
func (be *Backend) addOp(mode int, o uint64, rows, cols, qbits int, dst *devBits, x, y bmm.Vector, relu bool, rq bmm.Requant) error {
	dx, err := be.vector(x)
	if err != nil {
		return fmt.Errorf("x: %w", err)
	}
	dy, err := be.vector(y)
	if err != nil {
		return fmt.Errorf("y: %w", err)
	}
	if dx.n != rows*cols || dy.n != rows*cols {
		return fmt.Errorf("%w: adding %d and %d values into %d×%d", bmm.ErrShape, dx.n, dy.n, rows, cols)
	}
	byCols, lw32, plane32 := outLayout(dst)
	return be.d.run(func() error {
		if err := be.zeroOut(dst); err != nil {
			return err
		}
		if rows*cols == 0 {
			return nil
		}
		return be.launch("add", be.gridFor(rows*cols), 256, dx.ptr(), dy.ptr(), uint64(rows), uint64(cols), uint64(mode), o,
			uint64(b2i(relu)), f32bits(rq.Scale), f32bits(rq.Offset), uint64(qbits), uint64(byCols), uint64(lw32), uint64(plane32))
	})
}

// AddBit implements bmm.Backend.
func (be *Backend) AddBit(dst bmm.Bits, x, y bmm.Vector, relu bool, rq bmm.Requant) error {
	be.setOp("AddBit")
	dd, err := be.bitsOf(dst)
	if err != nil {
		return err
	}
	return be.addOp(outBits, dd.ptr(), dd.rows, dd.cols, dd.bits, dd, x, y, relu, rq)
}

// AddCodes implements bmm.Backend.
func (be *Backend) AddCodes(dst bmm.Codes, x, y bmm.Vector, relu bool, rq bmm.Requant) error {
	be.setOp("AddCodes")
	dc, err := be.codes(dst)
	if err != nil {
		return err
	}
	return be.addOp(outCodes, dc.ptr(), dc.rows, dc.cols, dc.bits, nil, x, y, relu, rq)
}

// AddFloat implements bmm.Backend.
func (be *Backend) AddFloat(dst bmm.Vector, x, y bmm.Vector, relu bool) error {
	be.setOp("AddFloat")
	dv, err := be.vector(dst)
	if err != nil {
		return err
	}
	return be.addOp(outFloat, dv.ptr(), 1, dv.n, 0, nil, x, y, relu, bmm.Requant{})
}

// PreferMerged implements bmm.Backend: a launch costs a few microseconds
// and an op over one batch of a few thousand rows fills a fraction of the
// device, so one launch per op over every row wins for any batches.
func (be *Backend) PreferMerged(batches, rows int) bool { return batches > 1 }
