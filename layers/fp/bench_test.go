package fp

import (
	"math/rand/v2"
	"testing"

	"github.com/qgtc/qgtc/internal/nn"
	"github.com/qgtc/qgtc/subgraph"
)

// benchData loads a bundled dataset with its split (a random 20/30 one
// when none is shipped), skipping the benchmark when it is missing.
func benchData(b *testing.B, name string) *Data {
	b.Helper()
	ds, err := subgraph.Load(name)
	if err != nil {
		b.Skipf("dataset %s: %v", name, err)
	}
	if len(ds.Train) == 0 {
		ds.RandomSplit(20, 30, 0)
	}
	d, err := NewData(ds, true)
	if err != nil {
		b.Fatal(err)
	}
	return d
}

// BenchmarkEpoch times one full-batch training step (forward, backward,
// Adam) per model and dataset with the standard recipes' sizes, reporting
// ms/epoch and nodes/s.
func BenchmarkEpoch(b *testing.B) {
	models := []Config{
		{Model: "gcn", Hidden: 64, Layers: 2, Dropout: 0.5},
		{Model: "gin", Hidden: 64, Layers: 2, Dropout: 0.5},
		{Model: "sage", Hidden: 64, Layers: 2, Dropout: 0.5},
		{Model: "gat", Hidden: 64, Heads: 8, Layers: 2, Dropout: 0.6, AttnDropout: 0.6},
	}
	for _, name := range []string{"cora", "citeseer", "amazon_photo", "amazon_computers", "coauthor_cs", "coauthor_physics"} {
		var d *Data
		for _, c := range models {
			b.Run("dataset="+name+"/model="+c.Model, func(b *testing.B) {
				if d == nil {
					d = benchData(b, name)
				}
				c.In, c.Out = d.Input.X.Cols, d.NumClasses
				m, err := New(c, 1)
				if err != nil {
					b.Fatal(err)
				}
				opt := newAdam(0.01, 5e-4)
				rng := rand.New(rand.NewPCG(1, 1))
				step := func() {
					tp := nn.NewTape(true, rng)
					tp.Backward(tp.CrossEntropy(m.Forward(tp, d.Input), d.Labels, d.Train))
					opt.Step(m.Params())
				}
				step() // build the cached graphs outside the timing
				b.ReportAllocs()
				b.ResetTimer()
				for b.Loop() {
					step()
				}
				sec := b.Elapsed().Seconds() / float64(b.N)
				b.ReportMetric(sec*1000, "ms/epoch")
				b.ReportMetric(float64(d.Input.X.Rows)/sec, "nodes/s")
			})
		}
	}
}
