package bmm

import (
	"errors"
	"unsafe"

	"github.com/qgtc/qgtc/bittensor"
)

// A Backend runs a quantized model's ops on operands it holds: on the CPU
// they are host slices (zero copy), on a GPU they are device memory. A
// compiled model uploads its weights once; a batch uploads its inputs (the
// packed features or their sparse codes, the 1-bit adjacency, its edge
// list, its per-node vectors) once; every op then reads and writes backend
// operands, so intermediates never leave the backend, and only the
// predictions (and the logits on request) come back.
//
// Every op computes exactly what Generic computes, bit for bit: the
// integer product or sum, then the Epilogue in its fixed float32 order
// (Epilogue.ApplyFloat of the float32 of the sum), then Requant.
// Products that can pass int32 (MaxSum > 2^31−1) are summed as WideProduct
// does, from int32 products of plane groups. bmmtest checks every backend
// against Generic, aggregations included.
//
// Ops may run asynchronously: an op's inputs must stay untouched and alive
// until a later Argmax or Read (which wait for every op before them), and
// operands are released with Free once no op queued later will read them
// (Free may come before the ops queued earlier finish: the backend keeps
// the memory until they have). A Backend is
// used by one goroutine at a time; a Forker gives more goroutines forks of
// itself that run ops at the same time on the same operands.
type Backend interface {
	// Name identifies the backend, e.g. "generic", "cpu/avx2", "tcu/wgmma".
	Name() string

	// UploadBits makes t a backend operand. The backend may keep a
	// reference to t's words (the CPU backend does): the caller must not
	// change them while the operand lives.
	UploadBits(t *bittensor.Tensor) (Bits, error)
	// UploadVector makes v (float32) a backend operand, with the same
	// reference rule as UploadBits.
	UploadVector(v []float32) (Vector, error)
	// UploadCodes makes a rows×cols matrix of bits-bit codes (bits 1..8,
	// row-major, each value below 2^bits) a backend operand.
	UploadCodes(vals []uint8, rows, cols, bits int) (Codes, error)
	// UploadGraph makes g an aggregation's left operand over srcRows rows.
	UploadGraph(g *Graph, srcRows int) (GraphOperand, error)

	// UploadIndex makes idx, distinct values in [0, bound), a backend
	// operand: the nodes a batch's rows stand for, where ArgmaxTo writes.
	// A value out of range or repeated is refused with ErrIndex. The
	// reference rule of UploadBits holds.
	UploadIndex(idx []int32, bound int) (Index, error)

	// NewBits, NewCodes and NewVector allocate outputs on the backend.
	NewBits(rows, cols, bits int, packing bittensor.Packing) (Bits, error)
	NewCodes(rows, cols, bits int) (Codes, error)
	NewVector(n int) (Vector, error)
	// NewInts allocates n int32 values, each set to fill.
	NewInts(n int, fill int32) (Ints, error)

	// MulBit writes rq(ep(A·B)) into dst (M×N, any packing): the fused
	// inter-layer step. A is packed by rows, B by columns.
	MulBit(dst Bits, a, b Bits, ep *Epi, rq Requant) error
	// MulCodes is MulBit into byte codes (dst.Bits() ≤ 8): the operand of
	// a following edge-list aggregation.
	MulCodes(dst Codes, a, b Bits, ep *Epi, rq Requant) error
	// MulFloat writes ep(A·B) into dst (M·N, row-major): the logits.
	MulFloat(dst Vector, a, b Bits, ep *Epi) error
	// AggBit, AggCodes and AggFloat are the same three outputs of G·X,
	// where row v of G·X sums the rows of x that row v of g lists, each
	// times its weight (1 without weights). Sums are int32: a graph whose
	// longest row × largest weight × top code of x passes 2^31−1 is
	// refused with ErrOverflow (CheckAgg), on every backend alike.
	AggBit(dst Bits, g GraphOperand, x Codes, ep *Epi, rq Requant) error
	AggCodes(dst Codes, g GraphOperand, x Codes, ep *Epi, rq Requant) error
	AggFloat(dst Vector, g GraphOperand, x Codes, ep *Epi) error
	// AddBit, AddCodes and AddFloat write the element-wise sum x + y
	// (float32, rounded once; AddValue), then the ReLU when relu, then
	// (Bit, Codes) rq: the join of two branches, such as GraphSAGE's
	// neighbour and root terms. x and y hold dst's rows × cols values,
	// row-major.
	AddBit(dst Bits, x, y Vector, relu bool, rq Requant) error
	AddCodes(dst Codes, x, y Vector, relu bool, rq Requant) error
	AddFloat(dst Vector, x, y Vector, relu bool) error
	// RowSums writes the sum of each row's codes of a (packed by rows)
	// into dst as float32: the zero-point term of the next epilogue.
	RowSums(dst Vector, a Bits) error

	// Argmax writes, for each row r of the rows×cols logits (rows =
	// len(dst), cols ≥ 1), ArgmaxRow of the row into dst[r] on the host:
	// the first largest value, a NaN never replacing the best. It waits
	// for every op before it.
	Argmax(dst []int32, logits Vector, cols int) error
	// ArgmaxTo writes ArgmaxRow of row r of the rows×cols logits (rows =
	// at.Len()) into dst[at[r]] on the backend and leaves dst's other
	// values as they are: the predictions of every batch go to one
	// graph-sized operand at the batches' nodes, and come back in one
	// ReadInts. at.Bound() must not pass dst.Len() (ErrShape).
	ArgmaxTo(dst Ints, at Index, logits Vector, cols int) error
	// ReadVector copies v to the host (logits on request) after every op
	// before it.
	ReadVector(dst []float32, v Vector) error
	// ReadInts copies v to the host (len(dst) = v.Len()) after every op
	// before it.
	ReadInts(dst []int32, v Ints) error
	// ReadBits returns a host copy of b (default padding) and ReadCodes
	// copies c's codes row-major into dst (len rows·cols), after every op
	// before them: for traces of intermediates and for bmmtest, which
	// checks every output bit for bit.
	ReadBits(b Bits) (*bittensor.Tensor, error)
	ReadCodes(dst []uint8, c Codes) error

	// PreferEdges is the backend's cost model: whether aggregating over
	// an edge list is cheaper than the dense product with the packed 1-bit
	// adjacency for these sizes (see AggCost.Batches).
	PreferEdges(c AggCost) bool
	// PreferMerged is the other half of the cost model: whether a pass
	// whose aggregations all go over edge lists should run its batches as
	// one block-diagonal batch (every op once, over all rows: the same
	// values row by row) rather than batch by batch (every op once per
	// batch), for batches batches of rows rows in all.
	PreferMerged(batches, rows int) bool
	// Traffic reports the bytes moved between host and backend and the
	// ops (launches) run since the backend opened.
	Traffic() Traffic
	// Close releases everything the backend holds.
	Close() error
}

// A Forker is a Backend that can run ops on several goroutines at once,
// each on a fork: a plan runs whole batches on forks side by side instead
// of splitting every op of one batch across the cores.
type Forker interface {
	Backend
	// Fork returns a Backend for one more goroutine. The fork and this
	// backend (its root) share their operands: either takes the other's,
	// for reading by any number of ops at once; an operand an op writes is
	// the writer's alone until that op's result is read. A fork runs each
	// op on its caller's goroutine only (no parallelism inside an op: the
	// forks are the parallelism) with results bit for bit those of the
	// root. Its ops count in its own Traffic and in the root's. Closing
	// the fork releases only the fork; closing the root makes every
	// operand foreign on its forks too. A fork of a fork is a fork of the
	// root.
	Fork() (Backend, error)
}

// A Stager is a Backend whose uploads can do their host side ahead of
// time, on another goroutine: a stream's host workers stage a batch's
// operands while the devices run earlier batches, and a device's goroutine
// then only queues the copies. Staging is shared by every backend of the
// same kind (any device's UploadBits finds what another staged).
type Stager interface {
	// StageBits prepares the upload of t, StageGraph that of g over
	// srcRows source rows: the next UploadBits(t), UploadGraph(g, srcRows)
	// takes what was staged. Neither t nor g may change in between. They
	// stage nothing where it cannot help or fails; the upload then does its
	// work (and reports any error) itself.
	StageBits(t *bittensor.Tensor)
	StageGraph(g *Graph, srcRows int)
	// Unstage gives back what was staged for op (a *bittensor.Tensor or
	// *Graph) and not uploaded; nothing when there is none.
	Unstage(op any)
}

// An Operand is a value held by a backend.
type Operand interface {
	// Free releases the operand; a second Free does nothing.
	Free()
}

// Bits is a packed bit tensor on a backend.
type Bits interface {
	Operand
	Rows() int
	Cols() int
	Bits() int
	Packing() bittensor.Packing
}

// Codes is a row-major matrix of codes of at most 8 bits, one byte each,
// on a backend: what an edge-list aggregation sums.
type Codes interface {
	Operand
	Rows() int
	Cols() int
	Bits() int
}

// Vector is float32 values on a backend.
type Vector interface {
	Operand
	Len() int
}

// Ints is int32 values on a backend: predictions.
type Ints interface {
	Operand
	Len() int
}

// Index is distinct values below Bound on a backend: the nodes of a
// batch's rows.
type Index interface {
	Operand
	Len() int
	Bound() int
}

// GraphOperand is an uploaded Graph.
type GraphOperand interface {
	Operand
	Rows() int
}

// Graph is a sparse left operand in CSR: row v lists in
// Indices[Indptr[v]:Indptr[v+1]] the source rows it sums, each times
// Weights[p] (nil: every weight is 1; else codes of WeightBits ≤ 8 bits, as
// in the sparse features of a first layer).
//
// A Graph is not changed once a backend has it: Stats remembers that it
// checked it.
type Graph struct {
	Indptr, Indices []int32
	Weights         []uint8
	WeightBits      int
	stats           unsafe.Pointer // *graphStats, set atomically
}

// Epi is an Epilogue whose vectors are backend operands; nil vectors skip
// their step, exactly as in Epilogue.
type Epi struct {
	ColScale, RowTerm, ColTerm, ColConst, RowScale, ColBias Vector
	ReLU                                                    bool
}

// AggCost describes an aggregation for PreferEdges.
type AggCost struct {
	Rows, Cols int // the output's shape
	Edges      int // entries of the edge list
	DenseTiles int // non-zero 64×256 tiles of the packed adjacency
	Bits       int // width of the aggregated codes
	// Batches > 1: the sizes above sum that many batches, and the choice
	// is one aggregation over all their edge lists (the batches merged)
	// against one dense product per batch.
	Batches int
	// Uploaded: each pass uploads the operand it aggregates over (a plan
	// that keeps nothing between passes), DenseBytes for the packed
	// adjacency against four bytes an entry and a row for the edge list.
	Uploaded   bool
	DenseBytes int64
	// HostLists: the choice is the first product's (the features' code
	// lists or their bit planes times the first weights), and each pass
	// makes the lists from the planes on the host (a packed file streamed
	// every pass), for Edges codes.
	HostLists bool
}

// Traffic counts what a backend moved and ran.
type Traffic struct {
	HostToDevice int64 // bytes uploaded
	DeviceToHost int64 // bytes downloaded
	Ops          int64 // ops run (kernel launches on a GPU)
}

// Sub is t − u: the traffic between two readings.
func (t Traffic) Sub(u Traffic) Traffic {
	return Traffic{t.HostToDevice - u.HostToDevice, t.DeviceToHost - u.DeviceToHost, t.Ops - u.Ops}
}

// Errors of backends, wrapped with what is at fault (besides ErrShape,
// ErrPacking, ErrOverflow and ErrBits).
var (
	// ErrForeign: an operand made by another backend, already freed, or of
	// a closed backend.
	ErrForeign = errors.New("bmm: operand of another backend or freed")
	// ErrRange: an uploaded code or weight does not fit its bit width.
	ErrRange = errors.New("bmm: value does not fit its bit width")
	// ErrIndex: an uploaded index is negative, not below its bound, or
	// repeated.
	ErrIndex = errors.New("bmm: index out of range or repeated")
)

// ArgmaxAter is a backend that writes a batch's predictions at an offset
// of an Ints on the backend: a stream of batches queues one batch after
// another without a copy back (and a wait) for each, and reads many
// batches' predictions in one ReadInts.
type ArgmaxAter interface {
	// ArgmaxAt writes ArgmaxRow of row r of the rows×cols logits into
	// dst[off+r] and leaves dst's other values as they are; off+rows must
	// not pass dst.Len() (ErrShape).
	ArgmaxAt(dst Ints, off int, logits Vector, cols int) error
}
