package pipeline_test

import (
	"fmt"
	"os"

	"github.com/qgtc/qgtc/cpu"
	"github.com/qgtc/qgtc/pipeline"
)

// A 4-bit GCN on Cora, trained briefly and cached between runs.
func ExampleJob_Infer() {
	c := pipeline.DefaultConfig("cora")
	c.Epochs, c.QATEpochs = 20, 2
	j := &pipeline.Job{Config: c, Backend: cpu.NewBackend(nil), CacheDir: os.TempDir() + "/qgtc-example", Warnings: os.Stderr}
	r, err := j.Infer()
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Printf("%s on %s: %.2f%% of the test nodes\n", r.Model, r.Dataset, 100**r.Accuracy)
}
