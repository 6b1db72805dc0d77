package pipeline

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"time"

	"github.com/qgtc/qgtc/bmm"
	"github.com/qgtc/qgtc/layers"
)

// Several devices of one host. Cluster-GCN inference needs no collective:
// each device gets a contiguous group of the batch plan (ShardRange, as
// sharded runs split it), compiles the model into a plan of its own and
// runs its group as a single-device run would (merged when its cost model
// says so), all devices at once; the predictions go to disjoint nodes and
// are gathered in node order, so the result is one device's bit for bit.

// Group is a model compiled on each device of a job (one plan when the
// job has one backend), with each device's share of the batches.
type Group struct {
	Plans []*layers.Plan
	Names []string // each device's label (Job.DeviceNames or its backend's name)
	// shares are each device's batches of the last Data run, kept so that
	// a plan's merged batch and resident inputs carry over between passes.
	of     *Data
	shares []*Data
	spans  [][2]int // [lo, hi) of each share
}

// DeviceReport is one device's part of a run over several devices.
type DeviceReport struct {
	Device     string  `json:"device"`
	Batches    int     `json:"batches"`
	BatchSpan  string  `json:"batch_span"` // "first-last", or "none"
	Nodes      int     `json:"nodes"`
	PackMS     float64 `json:"pack_ms"` // the first pass's
	ComputeMS  float64 `json:"compute_ms"`
	Merged     bool    `json:"merged"`
	PassMedian float64 `json:"pass_median_ms,omitempty"` // of its own share, in the passes after the first
	passMS     []float64
}

// backends is the job's devices: Devices when it holds any, else Backend.
func (j *Job) backends() []bmm.Backend {
	if len(j.Devices) > 0 {
		return j.Devices
	}
	if j.Backend == nil {
		return nil
	}
	return []bmm.Backend{j.Backend}
}

// CompileGroup compiles m on each of the job's devices (Compile's settings
// on each); the caller closes the group.
func (j *Job) CompileGroup(m *layers.Model) (*Group, error) {
	bes := j.backends()
	if len(bes) == 0 {
		return nil, ErrNoBackend
	}
	g := &Group{}
	for i, be := range bes {
		c := *j
		c.Backend = be
		p, err := c.Compile(m)
		if err != nil {
			g.Close()
			return nil, fmt.Errorf("device %d (%s): %w", i, be.Name(), err)
		}
		g.Plans = append(g.Plans, p)
		name := be.Name()
		if i < len(j.DeviceNames) {
			name = j.DeviceNames[i]
		}
		g.Names = append(g.Names, name)
	}
	return g, nil
}

// upload is what compiling moved to the devices, summed.
func (g *Group) upload() int64 {
	var n int64
	for _, p := range g.Plans {
		n += p.Upload.HostToDevice
	}
	return n
}

// Close closes every plan.
func (g *Group) Close() error {
	var errs []error
	for _, p := range g.Plans {
		errs = append(errs, p.Close())
	}
	return errors.Join(errs...)
}

// split returns the devices' shares of d's batches, made once per Data:
// ShardRange of the batches over the devices, none past the batch count.
func (g *Group) split(d *Data) []*Data {
	if g.of == d {
		return g.shares
	}
	nb := len(d.Batches.Eval)
	k := min(len(g.Plans), max(nb, 1))
	g.of, g.shares, g.spans = d, nil, nil
	for i := range k {
		lo, hi := ShardRange(i, k, nb)
		b := *d.Batches
		b.Eval = d.Batches.Eval[lo:hi]
		c := *d
		c.Batches = &b
		g.shares = append(g.shares, &c)
		g.spans = append(g.spans, [2]int{lo, hi})
	}
	return g.shares
}

// RunGroup runs g over d's batches with input in, each device its share
// at once, and gathers the predictions in node order. With one device it
// is Run. Several: Pack is the slowest device's packing and Compute the
// rest of the pass's wall time; Stats, Nodes, Traffic and EdgeListBatches
// are summed over devices, and Merged says every device merged its share.
// It returns each device's own result too.
func (j *Job) RunGroup(g *Group, d *Data, in *layers.Input) (*layers.Result, []*layers.Result, error) {
	if len(g.Plans) == 1 {
		r, err := j.Run(g.Plans[0], d, in)
		return r, []*layers.Result{r}, err
	}
	r, each, err := j.runShares(g, d, in)
	j.Progress.Done()
	return r, each, err
}

func (j *Job) runShares(g *Group, d *Data, in *layers.Input) (*layers.Result, []*layers.Result, error) {
	shares := g.split(d)
	each := make([]*layers.Result, len(shares))
	errs := make([]error, len(shares))
	var mu sync.Mutex // progress lines from the devices, one at a time
	done := 0
	t0 := time.Now()
	var wg sync.WaitGroup
	for i, s := range shares {
		p := g.Plans[i]
		wg.Go(func() {
			each[i], errs[i] = p.Run(s.Batches, in, j.Sparse(p, in), func(int, int) {
				mu.Lock()
				done++
				j.Progress.Printf("qgtc: inference batch %d/%d on %d devices", done, len(d.Batches.Eval), len(shares))
				mu.Unlock()
			})
		})
	}
	wg.Wait()
	wall := time.Since(t0)
	for i, err := range errs {
		if err != nil {
			return nil, nil, fmt.Errorf("device %d (%s): %w", i, g.Names[i], err)
		}
	}
	r := &layers.Result{Pred: make([]int32, d.Dataset.Graph.N()), Batches: len(d.Batches.Eval), Merged: true}
	for v := range r.Pred {
		r.Pred[v] = -1
	}
	for i, s := range shares {
		e := each[i]
		for _, b := range s.Batches.Eval {
			for _, v := range b.Nodes {
				r.Pred[v] = e.Pred[v]
			}
		}
		r.Pack = max(r.Pack, e.Pack)
		r.Stats.InterBytes += e.Stats.InterBytes
		r.Stats.UnfusedBytes += e.Stats.UnfusedBytes
		r.Nodes += e.Nodes
		r.EdgeListBatches += e.EdgeListBatches
		r.Merged = r.Merged && e.Merged
		r.Traffic.HostToDevice += e.Traffic.HostToDevice
		r.Traffic.DeviceToHost += e.Traffic.DeviceToHost
		r.Traffic.Ops += e.Traffic.Ops
	}
	r.Compute = max(0, wall-r.Pack)
	return r, each, nil
}

// MoreGroup is More on every device of g at once: each pass's time is the
// pass's wall time (RunGroup), and each device's own pack + compute goes
// into devs (one per device, from DeviceReports) for their medians.
func (j *Job) MoreGroup(g *Group, d *Data, in *layers.Input, first *layers.Result, n int, devs []DeviceReport) (*Passes, error) {
	if len(g.Plans) == 1 {
		return j.More(g.Plans[0], d, in, first, n)
	}
	ps := &Passes{N: n, SameAsHead: true}
	for i := range n {
		run, each, err := j.runShares(g, d, in)
		if err != nil {
			return nil, err
		}
		j.Progress.Printf("qgtc: pass %d/%d", i+2, n+1)
		ps.ComputeMS = append(ps.ComputeMS, ms(run.Pack+run.Compute))
		ps.H2DBytes, ps.D2HBytes, ps.Ops = run.Traffic.HostToDevice, run.Traffic.DeviceToHost, run.Traffic.Ops
		ps.SameAsHead = ps.SameAsHead && slices.Equal(run.Pred, first.Pred)
		ps.Replayed = true
		for k, e := range each {
			devs[k].passMS = append(devs[k].passMS, ms(e.Pack+e.Compute))
			ps.Replayed = ps.Replayed && e.Replayed
		}
	}
	j.Progress.Done()
	ps.MedianMS = median(ps.ComputeMS)
	for k := range devs {
		devs[k].PassMedian = median(devs[k].passMS)
	}
	return ps, nil
}

// DeviceReports describes each device's share of the last RunGroup, its
// batches numbered from base (the first batch of the Data it ran).
func (g *Group) DeviceReports(each []*layers.Result, base int) []DeviceReport {
	var out []DeviceReport
	for i, s := range g.shares {
		e := each[i]
		out = append(out, DeviceReport{Device: g.Names[i], Batches: len(s.Batches.Eval), BatchSpan: batchSpan(base+g.spans[i][0], base+g.spans[i][1]-1),
			Nodes: e.Nodes, PackMS: ms(e.Pack), ComputeMS: ms(e.Compute), Merged: e.Merged})
	}
	return out
}
