package templates_test

import (
	"fmt"

	"github.com/qgtc/qgtc/templates"
)

// A 3-node graph with edges 0→1, 2→1, 1→2 and 1→0, in pull form: row v
// lists the sources of its in-edges.
var exampleGraph = templates.CSR{
	Indptr:  []int32{0, 1, 3, 4},
	Indices: []int32{1, 0, 2, 1},
}

func ExampleSpMM() {
	x := []float32{ // 3 nodes × 2 features
		1, 10,
		2, 20,
		3, 30,
	}
	out := make([]float32, 6)
	if err := templates.SpMM(out, exampleGraph, templates.CopyU, templates.Sum, x, nil, nil, 2, nil, nil); err != nil {
		panic(err)
	}
	fmt.Println("sum:", out)

	arg := make([]int32, 6) // the winning edge per element, for backward
	if err := templates.SpMM(out, exampleGraph, templates.CopyU, templates.Max, x, nil, nil, 2, arg, nil); err != nil {
		panic(err)
	}
	fmt.Println("max:", out, "arg:", arg)

	w := []float32{0.5, 1, 2, 3} // one weight per edge (u_mul_e, as GCN's normalisation)
	if err := templates.SpMM(out, exampleGraph, templates.UMulE, templates.Sum, x, w, nil, 2, nil, nil); err != nil {
		panic(err)
	}
	fmt.Println("weighted:", out)
	// Output:
	// sum: [2 20 4 40 2 20]
	// max: [2 20 3 30 2 20] arg: [0 0 2 2 3 3]
	// weighted: [1 10 7 70 6 60]
}

func ExampleSDDMM() {
	x := []float32{1, 2, 3, 4, 5, 6} // 3 nodes × 2 features
	scores := make([]float32, 4)     // one per edge
	if err := templates.SDDMM(scores, exampleGraph, templates.UDotV, x, x, 2, 1, nil); err != nil {
		panic(err)
	}
	fmt.Println("u·v:", scores)
	if err := templates.EdgeSoftmax(scores, exampleGraph, scores, 1, nil); err != nil {
		panic(err)
	}
	fmt.Printf("softmax: %.3f\n", scores)
	// Output:
	// u·v: [11 11 39 39]
	// softmax: [1.000 0.000 1.000 1.000]
}
