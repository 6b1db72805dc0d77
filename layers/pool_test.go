package layers

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/qgtc/qgtc/bittensor"
	"github.com/qgtc/qgtc/bmm"
	"github.com/qgtc/qgtc/cpu"
	"github.com/qgtc/qgtc/subgraph"
)

// testBackends are the backends the plan tests run on: the reference and
// the CPU's best path.
func testBackends() []bmm.Backend {
	return []bmm.Backend{bmm.NewGenericBackend(), cpu.NewBackend(nil)}
}

// unequalData is a 300-node task cut into batches of 170, 30 and 100 nodes.
func unequalData(t *testing.T, kind string, abits, wbits int, binary bool) (*Model, *Data, *Input) {
	t.Helper()
	ds := qSynth(t, 300, 4, 40, binary, 3)
	parts := make([]int32, ds.Graph.N())
	for v := range parts {
		switch {
		case v < 170:
			parts[v] = 0
		case v < 200:
			parts[v] = 1
		default:
			parts[v] = 2
		}
	}
	return trainedOn(t, ds, parts, 3, kind, abits, wbits)
}

// trainedOn is a kind model (40 → 16 → 4, widths abits and wbits) trained
// two fp32 epochs and calibrated on ds batched by the k parts of parts.
func trainedOn(t *testing.T, ds *subgraph.Dataset, parts []int32, k int, kind string, abits, wbits int) (*Model, *Data, *Input) {
	t.Helper()
	d, err := NewData(ds, parts, k, 1)
	require.NoError(t, err)
	in, err := QuantizeInput(ds.Features, abits)
	require.NoError(t, err)
	m, err := NewModel(kind, 40, 16, 4, 2, abits, wbits, 5)
	require.NoError(t, err)
	_, err = m.TrainFP32(d, in, TrainConfig{Epochs: 2, LR: 0.01, Seed: 1})
	require.NoError(t, err)
	require.NoError(t, m.Calibrate(d, in, 0))
	return m, d, in
}

// batchLogits is p's logits on batch b: from in's sparse codes
// (ForwardSparse) or from its bit planes packed for b (Forward).
func batchLogits(t *testing.T, p *Plan, b *Batch, in *Input, sparse bool) []float32 {
	t.Helper()
	if sparse {
		out, _, err := p.ForwardSparse(b, in, nil)
		require.NoError(t, err)
		return out
	}
	x, err := in.Pack(b.Nodes)
	require.NoError(t, err)
	out, _, err := p.Forward(b, x, nil)
	require.NoError(t, err)
	return out
}

// TestQRunReusesOutputStorage: a plan keeps its op outputs from one batch
// to the next (opPool). Over batches of unequal sizes, run again (the
// second run of a batch writes over outputs that hold the first's values),
// every logit equals the one a fresh plan computes, bit for bit, and Run's
// predictions are their argmax.
func TestQRunReusesOutputStorage(t *testing.T) {
	for _, kind := range []string{GCN, GIN, SAGE} {
		for _, tc := range []struct {
			abits, wbits int
			binary       bool
		}{{1, 1, true}, {4, 4, false}, {4, 4, true}, {12, 4, false}} {
			m, d, in := unequalData(t, kind, tc.abits, tc.wbits, tc.binary)
			for _, mode := range []AggMode{AggDense, AggSparse} {
				for _, sparse := range []bool{false, true} {
					name := fmt.Sprintf("%s/a=%d/w=%d/binary=%v/%s/sparse-input=%v", kind, tc.abits, tc.wbits, tc.binary, mode, sparse)
					t.Run(name, func(t *testing.T) {
						be := cpu.NewBackend(nil)
						plan, err := m.Compile(be)
						require.NoError(t, err)
						defer plan.Close()
						plan.Agg = mode
						want := make([]int32, d.Graph.N())
						for i := range want {
							want[i] = -1
						}
						forward := func(p *Plan, b *Batch) []float32 { return batchLogits(t, p, b, in, sparse) }
						// Large, small, middle, then the large one again.
						for _, bi := range []int{0, 1, 2, 0} {
							b := d.Eval[bi]
							fp, err := m.Compile(be)
							require.NoError(t, err)
							fp.Agg = mode
							fresh := forward(fp, b)
							require.NoError(t, fp.Close())
							reused := forward(plan, b)
							require.Len(t, reused, len(fresh))
							for i := range fresh {
								require.Equal(t, math.Float32bits(fresh[i]), math.Float32bits(reused[i]), "batch %d logit %d", bi, i)
							}
							Argmax(want, fresh, m.Classes, b.Nodes)
						}
						require.NotEmpty(t, plan.pool.free, "the outputs went back to the pool")
						for range 2 {
							run, err := plan.Run(d, in, sparse, nil)
							require.NoError(t, err)
							require.Equal(t, want, run.Pred)
						}
					})
				}
			}
		}
	}
}

// TestPlanTraffic: a whole pass on the CPU backend moves no bytes (its
// operands are host memory) and runs at least one op per plan op and
// batch, a pass on the generic backend gives the same logits bit for bit,
// and a closed plan refuses to run.
func TestPlanTraffic(t *testing.T) {
	for _, kind := range []string{GCN, GIN, SAGE} {
		for _, mode := range []AggMode{AggDense, AggSparse} {
			for _, sparse := range []bool{false, true} {
				t.Run(fmt.Sprintf("%s/%s/sparse-input=%v", kind, mode, sparse), func(t *testing.T) {
					m, d, in := unequalData(t, kind, 4, 4, false)
					logits := map[string][]float32{}
					for _, be := range testBackends() {
						plan, err := m.Compile(be)
						require.NoError(t, err)
						plan.Agg = mode
						assert.Equal(t, int64(0), plan.Upload.HostToDevice+plan.Upload.DeviceToHost, "%s: compile", be.Name())
						run, err := plan.Run(d, in, sparse, nil)
						require.NoError(t, err)
						if be.Name() != "generic" {
							assert.Equal(t, bmm.Traffic{Ops: run.Traffic.Ops}, run.Traffic, "cpu: a pass moves no bytes")
						}
						// Whether the cost model merges depends on the cores (cpu's
						// PreferMerged); it never merges a dense pass.
						assert.Equal(t, mode == AggSparse && be.PreferMerged(len(d.Eval), d.Graph.N()), run.Merged,
							"%s: merged when every aggregation takes the edge list and the backend prefers it", be.Name())
						passes := len(d.Eval)
						if run.Merged {
							passes = 1
						}
						assert.GreaterOrEqual(t, run.Traffic.Ops, int64(len(plan.ops)*passes), be.Name())
						var all []float32
						for _, b := range d.Eval {
							all = append(all, batchLogits(t, plan, b, in, sparse)...)
						}
						logits[be.Name()] = all
						require.NoError(t, plan.Close())
						_, err = plan.Run(d, in, sparse, nil)
						assert.ErrorIs(t, err, ErrModel, "a closed plan")
					}
					require.Len(t, logits, 2)
					var ref []float32
					for name, l := range logits {
						if ref == nil {
							ref = l
							continue
						}
						require.Len(t, l, len(ref))
						for i := range l {
							require.Equal(t, math.Float32bits(ref[i]), math.Float32bits(l[i]), "%s: logit %d", name, i)
						}
					}
				})
			}
		}
	}
}

// deviceBackend is the generic backend with a device's bookkeeping: every
// upload and read is counted in bytes, as a GPU backend counts them.
type deviceBackend struct {
	bmm.Backend
	t bmm.Traffic
}

func (d *deviceBackend) UploadBits(t *bittensor.Tensor) (bmm.Bits, error) {
	d.t.HostToDevice += int64(8 * len(t.Words()))
	return d.Backend.UploadBits(t)
}

func (d *deviceBackend) UploadVector(v []float32) (bmm.Vector, error) {
	d.t.HostToDevice += int64(4 * len(v))
	return d.Backend.UploadVector(v)
}

func (d *deviceBackend) UploadCodes(vals []uint8, rows, cols, bits int) (bmm.Codes, error) {
	d.t.HostToDevice += int64(len(vals))
	return d.Backend.UploadCodes(vals, rows, cols, bits)
}

func (d *deviceBackend) UploadGraph(g *bmm.Graph, src int) (bmm.GraphOperand, error) {
	d.t.HostToDevice += int64(4*(len(g.Indptr)+len(g.Indices)) + len(g.Weights))
	return d.Backend.UploadGraph(g, src)
}

func (d *deviceBackend) Argmax(dst []int32, l bmm.Vector, cols int) error {
	d.t.DeviceToHost += int64(4 * len(dst))
	return d.Backend.Argmax(dst, l, cols)
}

func (d *deviceBackend) UploadIndex(idx []int32, bound int) (bmm.Index, error) {
	d.t.HostToDevice += int64(4 * len(idx))
	return d.Backend.UploadIndex(idx, bound)
}

func (d *deviceBackend) ReadInts(dst []int32, v bmm.Ints) error {
	d.t.DeviceToHost += int64(4 * len(dst))
	return d.Backend.ReadInts(dst, v)
}

func (d *deviceBackend) ReadVector(dst []float32, v bmm.Vector) error {
	d.t.DeviceToHost += int64(4 * len(dst))
	return d.Backend.ReadVector(dst, v)
}

func (d *deviceBackend) Traffic() bmm.Traffic {
	t := d.t
	t.Ops = d.Backend.Traffic().Ops
	return t
}

// TestPlanDeviceTraffic: on a backend whose uploads move bytes, a GCN
// pass moves exactly each batch's inputs up (packed features, then the
// packed adjacency or the edge list, and three vectors: D^-1/2, the
// degrees and D^-1/2 times the feature scale) and only the predictions
// back, in one copy of the graph's, the same in every pass (the weights
// went up once, at Compile; each batch's node ids once, in the first
// pass, for the predictions' scatter on the backend).
func TestPlanDeviceTraffic(t *testing.T) {
	m, d, in := unequalData(t, GCN, 4, 4, false)
	for _, mode := range []AggMode{AggDense, AggSparse} {
		t.Run(mode.String(), func(t *testing.T) {
			be := &deviceBackend{Backend: bmm.NewGenericBackend()}
			plan, err := m.Compile(be)
			require.NoError(t, err)
			defer plan.Close()
			plan.Agg, plan.Merge = mode, MergeOff
			// Two weight tensors and their epilogues: at least the packed codes.
			assert.GreaterOrEqual(t, plan.Upload.HostToDevice, int64(plan.WeightBytes))
			assert.Zero(t, plan.Upload.DeviceToHost)
			var want bmm.Traffic
			var ids int64
			for _, b := range d.Eval {
				x, err := in.Pack(b.Nodes)
				require.NoError(t, err)
				n := int64(b.N())
				want.HostToDevice += int64(8*len(x.Words())) + 3*4*n
				if mode == AggDense {
					want.HostToDevice += int64(8 * len(packedAdj(t, b).Words()))
				} else {
					want.HostToDevice += int64(4 * (len(b.Indptr) + len(b.Indices)))
				}
				ids += 4 * n
			}
			want.DeviceToHost = int64(4 * d.Graph.N())
			for pass := range 2 {
				run, err := plan.Run(d, in, false, nil)
				require.NoError(t, err)
				up := want.HostToDevice
				if pass == 0 {
					up += ids
				}
				assert.Equal(t, up, run.Traffic.HostToDevice, "pass %d: bytes up", pass)
				assert.Equal(t, want.DeviceToHost, run.Traffic.DeviceToHost, "pass %d: bytes down", pass)
			}
		})
	}
}

// TestPlanAggregatesInput runs a DAG whose first op aggregates the input
// features themselves (as SGC, and SAGE's first mean, do), then a linear
// reads that value and a dead op reads it too: the features go up in the
// form the aggregation takes (packed by columns for the dense product, byte
// codes for the edge list, built from the packed tensor or from the sparse
// lists), the dead op runs nothing, and every way gives the same logits
// bit for bit on the generic and the CPU backends.
func TestPlanAggregatesInput(t *testing.T) {
	for _, binary := range []bool{true, false} {
		t.Run(fmt.Sprintf("binary=%v", binary), func(t *testing.T) {
			ds := qSynth(t, 200, 4, 40, binary, 9)
			d, err := NewData(ds, nil, 1, 1)
			require.NoError(t, err)
			in, err := QuantizeInput(ds.Features, 4)
			require.NoError(t, err)
			m, err := NewModel(GCN, 40, 16, 4, 1, 4, 4, 3)
			require.NoError(t, err)
			require.NoError(t, m.Calibrate(d, in, 0))
			lin := &m.Layers[0].Lin1
			q := paramsFor(4, 0, 4)
			ops := []planOp{
				{kind: qAgg, in: []int{0}, rowScale: true, out: &q},
				{kind: qAgg, in: []int{1}, out: &q}, // read by no one
				{kind: qLin, in: []int{1}, lin: lin, biasOf: lin},
			}
			var ref []float32
			for _, be := range testBackends() {
				p := &Plan{Model: m, Backend: be, ops: ops}
				require.NoError(t, p.compile())
				for _, mode := range []AggMode{AggDense, AggSparse} {
					p.Agg = mode
					b := d.Eval[0]
					x, err := in.Pack(b.Nodes)
					require.NoError(t, err)
					traced := 0
					got, _, err := p.Forward(b, x, func(op int, _ *bittensor.Tensor) { traced++ })
					require.NoError(t, err)
					assert.Equal(t, 2, traced, "the dead op runs nothing")
					sp, _, err := p.ForwardSparse(b, in, nil)
					require.NoError(t, err)
					if ref == nil {
						ref = got
						require.NotEqual(t, slices.Min(ref), slices.Max(ref), "logits that tell the nodes apart")
					}
					name := fmt.Sprintf("%s/%s", be.Name(), mode)
					require.Len(t, got, len(ref), name)
					for i := range ref {
						require.Equal(t, math.Float32bits(ref[i]), math.Float32bits(got[i]), "%s: logit %d", name, i)
						require.Equal(t, math.Float32bits(ref[i]), math.Float32bits(sp[i]), "%s, sparse lists: logit %d", name, i)
					}
				}
				require.NoError(t, p.Close())
			}
		})
	}
}
