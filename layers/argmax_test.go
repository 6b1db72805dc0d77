package layers

import (
	"math/rand/v2"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/qgtc/qgtc/internal/learn"
)

// TestQArgmaxFirstLargest: Argmax writes learn.Argmax of logits row i (the
// first largest, NaNs never taken) to pred[nodes[i]] and leaves the other
// nodes alone, over enough rows to split across goroutines.
func TestQArgmaxFirstLargest(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 1))
	const c, n = 7, 5000
	logits := make([]float32, n*c)
	for i := range logits {
		logits[i] = float32(r.IntN(5))
	}
	nodes := make([]int32, n)
	for i := range nodes {
		nodes[i] = int32(2*i + 1)
	}
	pred := make([]int32, 2*n+1)
	for i := range pred {
		pred[i] = -1
	}
	Argmax(pred, logits, c, nodes)
	for i, v := range nodes {
		assert.Equal(t, int32(learn.Argmax(logits[i*c:(i+1)*c])), pred[v], "row %d", i)
		assert.Equal(t, int32(-1), pred[v-1], "node %d is in no row", v-1)
	}
}
