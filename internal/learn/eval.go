package learn

import "math"

// Argmax returns the position of row's largest value, the first one on
// ties, never a NaN (a NaN first is kept when nothing else is larger): the
// running-best scan x > best, computed branch-light. Row must not be empty.
func Argmax(row []float32) int {
	// The largest value first (the max builtin has no data-dependent
	// branch), then its first position: about one mispredicted branch per
	// row instead of one per new running best.
	bv := row[0]
	for _, x := range row[1:] {
		bv = max(bv, x)
	}
	best := 0
	if bv == bv {
		for row[best] != bv {
			best++
		}
		return best
	}
	run := row[0] // a NaN: the running-best scan, whose > never takes one
	for j, x := range row {
		if x > run {
			run, best = x, j
		}
	}
	return best
}

// Accuracy is the fraction of nodes whose prediction equals its label
// (pred and labels indexed by node id); NaN for no nodes.
func Accuracy(pred, labels, nodes []int32) float64 {
	if len(nodes) == 0 {
		return math.NaN()
	}
	ok := 0
	for _, v := range nodes {
		if pred[v] == labels[v] {
			ok++
		}
	}
	return float64(ok) / float64(len(nodes))
}
