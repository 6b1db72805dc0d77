package tcu

import (
	"fmt"
	"maps"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/qgtc/qgtc/templates"
)

// fpPartsGraph is the partitioned tests' square graph (hubs included) and
// a partition of it with k parts: with k = 3, two thirds of the nodes are
// in part 0 (more than a piece) and a third of the edges fall inside a
// piece; with more parts, uniform ones, too few edges for staging.
func fpPartsGraph(ids bool, k int) (templates.CSR, []int32) {
	r := rand.New(rand.NewPCG(24, uint64(b2i(ids))))
	g := skewedCSR(r, fpSpMMSources, fpSpMMSources, ids)
	parts := make([]int32, g.Rows())
	for v := range parts {
		switch {
		case k == 3 && r.IntN(3) < 2:
		case k == 3:
			parts[v] = int32(1 + r.IntN(2))
		default:
			parts[v] = int32(r.IntN(k))
		}
	}
	return g, parts
}

func TestPartLayout(t *testing.T) {
	g, parts := fpPartsGraph(false, 3)
	requireSkew(t, g)
	order, start, loc, err := partLayout(g, parts, 3)
	require.NoError(t, err)
	n := g.Rows()
	require.ElementsMatch(t, order, slices.Collect(func(yield func(int32) bool) {
		for v := range n {
			if !yield(int32(v)) {
				return
			}
		}
	}), "order is a permutation of the nodes")
	require.Equal(t, int32(0), start[0])
	require.Equal(t, int32(n), start[len(start)-1])
	piece := make([]int, n)
	cut := false
	for i := 0; i+1 < len(start); i++ {
		members := order[start[i]:start[i+1]]
		require.NotEmpty(t, members)
		require.LessOrEqual(t, len(members), fpPartMax)
		cut = cut || len(members) == fpPartMax
		require.True(t, slices.IsSorted(members), "a piece keeps its part's node order")
		for _, v := range members {
			require.Equal(t, parts[members[0]], parts[v], "a piece is inside one part")
			piece[v] = i
		}
		if i > 0 {
			prev := order[start[i]-1]
			require.LessOrEqual(t, parts[prev], parts[members[0]], "pieces follow the parts in order")
		}
	}
	require.True(t, cut, "the test's parts are larger than a piece")
	inside := 0
	for v := range n {
		for pos := g.Indptr[v]; pos < g.Indptr[v+1]; pos++ {
			u := g.Indices[pos]
			if l := loc[pos]; l >= 0 {
				require.Equal(t, u, order[start[piece[v]]+l], "edge %d's slot names its source", pos)
				inside++
			} else {
				require.NotEqual(t, piece[u], piece[v], "edge %d's source is outside the piece", pos)
			}
		}
	}
	require.GreaterOrEqual(t, float64(inside)/float64(g.NNZ()), fpInsideMin, "k = 3 is staged (TestFPPartsSpMM)")
	_, parts8 := fpPartsGraph(false, 8)
	_, _, loc8, err := partLayout(g, parts8, 8)
	require.NoError(t, err)
	in8 := int32(0)
	for _, l := range loc8 {
		in8 += b2i(l >= 0)
	}
	require.Less(t, float64(in8)/float64(g.NNZ()), fpInsideMin, "k = 8 is not")

	for _, c := range []struct {
		parts []int32
		k     int
		want  string
	}{{parts[:n-1], 3, "partition of 899 nodes"}, {parts, 0, "0 parts"}, {append(slices.Clone(parts[:n-1]), 3), 3, "node 899 is in part 3"},
		{append(slices.Clone(parts[:n-1]), -1), 3, "in part -1"}} {
		_, _, _, err := partLayout(g, c.parts, c.k)
		require.ErrorIs(t, err, ErrShape)
		require.ErrorContains(t, err, c.want)
	}
}

func TestPartItems(t *testing.T) {
	start := []int32{0, 100, 356, 400, 656, 700}
	for _, c := range []struct{ tiles, group int }{{1, 1000}, {3, 1000}, {3, 300}, {2, 1}} {
		items := partItems(start, c.tiles, c.group)
		seen := map[[2]int32]int{}
		for i := 0; i < len(items); i += 2 {
			seen[[2]int32{items[i], items[i+1]}]++
		}
		require.Len(t, seen, 5*c.tiles, "every piece at every tile")
		for k, n := range seen {
			require.Equal(t, 1, n, "%v once", k)
		}
		// Within a group the tiles run in order: a piece's tile t+1 comes
		// after every tile t of its group, and a group holds at most
		// c.group rows unless it is one piece.
		for i := 0; i+2 < len(items); i += 2 {
			if items[i+3] < items[i+1] {
				require.Less(t, items[i], items[i+2], "a new group starts at a later piece")
			}
		}
	}
	got := partItems(start, 2, 400)
	want := []int32{0, 0, 1, 0, 2, 0, 0, 1, 1, 1, 2, 1, 3, 0, 4, 0, 3, 1, 4, 1}
	require.Equal(t, want, got, "groups of pieces 0-2 (400 rows) and 3-4")
}

// TestFPPartsSpMM runs every message reading x × reduction on a
// partitioned square graph (UploadCSRParts) against templates.SpMM
// (relative 1e-5), at every conformance width: staged (k = 3, pieces cut
// from a part larger than fpPartMax) and in part order only (k = 8).
func TestFPPartsSpMM(t *testing.T) {
	d := fpDevice(t)
	r := rand.New(rand.NewPCG(24, 9))
	for _, c := range []struct {
		ids   bool
		k     int
		stage bool
	}{{false, 3, true}, {true, 3, true}, {true, 8, false}} {
		ids := c.ids
		g, parts := fpPartsGraph(ids, c.k)
		n := g.Rows()
		dg, err := d.UploadCSRParts(g, parts, c.k)
		require.NoError(t, err)
		t.Cleanup(func() { assert.NoError(t, dg.Close()) })
		hr, _ := dg.HeavyRows()
		require.Positive(t, hr, "the graph has rows past the heavy limit")
		pieces, inside := dg.Pieces()
		require.Greater(t, pieces, c.k-1)
		require.Equal(t, c.stage, inside >= fpInsideMin, "inside %.3f", inside)
		for _, f := range fpWidths {
			x, y := randFloats(r, n*f), randFloats(r, n*f)
			es := map[int][]float32{}
			for _, fe := range []int{1, 2, f} {
				if f%fe == 0 {
					es[fe] = randFloats(r, g.NNZ()*fe)
				}
			}
			t.Run(fmt.Sprintf("ids=%v/k=%d/f=%d", ids, c.k, f), func(t *testing.T) {
				t.Parallel()
				for m, mm := range fpMessages {
					if !mm.x {
						continue
					}
					fes := []int{1}
					if mm.e {
						fes = slices.Sorted(maps.Keys(es))
					}
					for red := range fpReductions {
						for _, fe := range fes {
							ys, e := y, es[fe]
							if !mm.y {
								ys = nil
							}
							if !mm.e {
								e = nil
							}
							what := fmt.Sprintf("%v %v fe=%d", m, red, fe)
							want := make([]float32, n*f)
							require.NoError(t, templates.SpMM(want, g, m, red, x, e, ys, f, nil, nil), what)
							var scale []float32
							if red == templates.Sum || red == templates.Mean {
								scale = make([]float32, n*f)
								require.NoError(t, templates.SpMM(scale, g, m, red, absAll(x), absAll(e), absAll(ys), f, nil, nil))
							}
							got := make([]float32, n*f)
							require.NoError(t, runSpMM(d, got, dg, m, red, x, e, ys, f, fe), what)
							closeTo(t, what+" parts", got, want, scale)
						}
					}
				}
			})
		}
	}
}
