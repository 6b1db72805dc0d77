package pipeline

import (
	"os"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/qgtc/qgtc/cpu"
	"github.com/qgtc/qgtc/layers"
	"github.com/qgtc/qgtc/subgraph"
)

// BenchmarkPackedLoadPrepare is a streamed batch's host work, load (read
// and decode from the file) and PreparePacked apart, per batch, on the
// packed file $QGTC_BENCH_PACKED with the model $QGTC_BENCH_MODEL (the
// commands that make them are in bench/scale/RESULTS.md); skipped without
// them. Edge-list aggregations, dense and sparse first products.
func BenchmarkPackedLoadPrepare(b *testing.B) {
	file, model := os.Getenv("QGTC_BENCH_PACKED"), os.Getenv("QGTC_BENCH_MODEL")
	if file == "" || model == "" {
		b.Skip("set QGTC_BENCH_PACKED and QGTC_BENCH_MODEL (bench/scale/RESULTS.md)")
	}
	w, err := ReadWeights(model)
	require.NoError(b, err)
	pf, err := subgraph.OpenPackedBatches(file)
	require.NoError(b, err)
	defer pf.Close()
	c := DefaultConfig("")
	c.Agg = layers.AggSparse
	j := &Job{Config: c, Backend: cpu.NewBackend(nil), Weights: w}
	g, err := j.CompileGroup(w.Model)
	require.NoError(b, err)
	defer g.Close()
	info := pf.Info
	params := layers.Params{Bits: info.QBits, Scale: info.QScale, Lower: info.QLower}
	ld := newPackedLoader(pf, file)
	// next loads the batch after the last, starting a new pass (and
	// forgetting the nodes seen) after the last batch.
	at := 0
	next := func() *layers.PackedBatch {
		if at == pf.Len() {
			at = 0
			ld.newPass()
		}
		pb, err := ld.load(at)
		require.NoError(b, err)
		at++
		return pb
	}
	nodes := func() float64 { return float64(info.Nodes) / float64(pf.Len()) }
	b.Run("load", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			next().Release()
		}
		b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/nodes(), "ns/node")
	})
	for _, sparse := range []bool{false, true} {
		name := "prepare/dense-input"
		if sparse {
			name = "prepare/sparse-input"
		}
		b.Run(name, func(b *testing.B) {
			pbs := make([]*layers.PackedBatch, pf.Len())
			for i := range pbs {
				pbs[i] = next()
			}
			b.ReportAllocs()
			b.ResetTimer()
			k := 0
			for b.Loop() {
				pp, err := g.Plans[0].PreparePacked(pbs[k%len(pbs)], params, info.AllOnes, sparse)
				require.NoError(b, err)
				pp.Release()
				k++
			}
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/nodes(), "ns/node")
		})
	}
}
