package subgraph

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strconv"
)

// Bounds on what a dataset file can make the loaders (and the models fed
// from them) allocate. A crafted file must fail with one line, never
// exhaust memory: every size a file claims is checked against these and
// against the bytes actually present before anything is allocated.
const (
	// MaxClasses caps the number of classes (single- or multi-label). A
	// model's output layer, logits and one-hot targets scale with it; the
	// largest node-classification benchmarks have a few hundred.
	MaxClasses = 1 << 13
	// MaxFeatureEntries caps rows × columns of a feature matrix, sparse or
	// not: the first layer's weights and every packed batch of features
	// scale with the column count (Coauthor Physics, the widest bundled
	// set, has 34,493 × 8,415 = 2.9e8).
	MaxFeatureEntries = 1 << 30
	// MaxFeatureCols caps the columns alone: the first layer's weights,
	// their gradients, optimizer state and the model copies training keeps
	// are each hidden × columns floats, whatever the row count, so a shape
	// of 3 × 3e8 (under MaxFeatureEntries) asked for tens of gigabytes.
	// The widest bundled set has 8,415 columns, common benchmarks ~31,000.
	MaxFeatureCols = 1 << 16
	// MaxSynthFeatureEntries caps the stored entries of generated features
	// (PlantedFeatures): nothing is read from a file, so only the int32
	// row offsets bound them (16 per node at 100M nodes is 1.6e9).
	MaxSynthFeatureEntries = math.MaxInt32

	// Decompression (zip members, miCOMPRESSED elements, gzip) may produce
	// at most inflateFloor bytes plus inflateRatio per compressed byte of
	// the file. Real files inflate about 10x (the amazon/coauthor zips);
	// deflate alone reaches 1,032x, which is how a 1.5 MB file asked for
	// gigabytes.
	inflateRatio = 100
	inflateFloor = 16 << 20

	// Feature values beyond extremeAbs, or extremeRatio times the 99th
	// percentile of |x|, earn a warning: one such value sets the
	// quantization range and flattens every other value to one code.
	extremeAbs   = 1e6
	extremeRatio = 1e3
)

// inflateBudget is how many decompressed bytes a file of size n may yield
// in all (nested archives share the outer file's budget).
func inflateBudget(n int) int64 { return inflateFloor + inflateRatio*int64(n) }

// budgetReader fails with ErrFormat once more than *left bytes come out of
// r, charging what it passes on to *left.
type budgetReader struct {
	r    io.Reader
	left *int64
	what string // names the stream in the error
	size int    // compressed size, for the error
}

func (b *budgetReader) Read(p []byte) (int, error) {
	if *b.left <= 0 {
		// Out of budget: fine if the stream ends here, an error if not.
		var one [1]byte
		n, err := b.r.Read(one[:])
		for n == 0 && err == nil {
			n, err = b.r.Read(one[:])
		}
		if n == 0 {
			return 0, err
		}
		return 0, fmt.Errorf("%w: %s inflates past %d bytes from %d compressed bytes (at most %dx plus %d MiB is accepted)",
			ErrFormat, b.what, inflateBudget(b.size)-*b.left, b.size, inflateRatio, inflateFloor>>20)
	}
	if int64(len(p)) > *b.left {
		p = p[:*b.left]
	}
	n, err := b.r.Read(p)
	*b.left -= int64(n)
	return n, err
}

// excerpt quotes at most the first 32 bytes of s (Go-escaped, with "..."
// when cut) so that errors never echo long or binary file content.
func excerpt(s string) string {
	const limit = 32
	if len(s) <= limit {
		return strconv.Quote(s)
	}
	return strconv.Quote(s[:limit]) + "..."
}

// checkValues is the last step of every loader: it rejects non-finite
// feature values (naming row and column), feature matrices and class
// counts beyond the bounds above, and records warnings for extreme value
// ranges. name is the file or folder for the messages.
func (d *Dataset) checkValues(name string) error {
	n := 0
	if d.Graph != nil {
		n = d.Graph.N()
	}
	if d.Labels == nil && d.Multi == nil {
		n = math.MaxInt // graph-level classes, or none
	}
	if err := checkClasses(name, d.NumClasses, n); err != nil {
		return err
	}
	if d.Labels != nil {
		for v, c := range d.Labels {
			if int(c) >= d.NumClasses || c < -1 {
				return fmt.Errorf("%w: %s: node %d has label %d outside [-1, %d)", ErrInconsistent, name, v, c, d.NumClasses)
			}
		}
	}
	for _, f := range []struct {
		what string
		m    *Features
	}{{"features", d.Features}, {"multi-labels", d.Multi}} {
		if f.m == nil {
			continue
		}
		if err := f.m.checkSize(name, f.what); err != nil {
			return err
		}
	}
	if d.Features == nil {
		return nil
	}
	if r, c, v, bad := d.Features.nonFinite(); bad {
		return fmt.Errorf("%w: %s: feature at row %d, column %d is %v", ErrValue, name, r, c, v)
	}
	if w := d.Features.rangeWarning(); w != "" {
		d.Warnings = append(d.Warnings, fmt.Sprintf("%s: %s", name, w))
	}
	return nil
}

// checkClasses bounds a class count: at most MaxClasses, and no more than
// max(nodes, 2) (class ids are 0..C-1; a label of 1,000,000 on a 2,708-node
// graph is a corrupt file, and would size the output layer by it).
func checkClasses(name string, classes, nodes int) error {
	if classes > MaxClasses || classes > max(nodes, 2) {
		return fmt.Errorf("%w: %s: %d classes for %d nodes (at most max(nodes, 2) and %d; renumber the classes 0..C-1)", ErrInconsistent, name, classes, nodes, MaxClasses)
	}
	return nil
}

// checkSize bounds rows × cols by MaxFeatureEntries and cols by
// MaxFeatureCols.
func (f *Features) checkSize(name, what string) error {
	if f.Cols > 0 && f.Rows > MaxFeatureEntries/f.Cols {
		return fmt.Errorf("%w: %s: %s are %d×%d, more than %d entries; the first layer and every packed batch scale with the columns", ErrInconsistent, name, what, f.Rows, f.Cols, MaxFeatureEntries)
	}
	if f.Cols > MaxFeatureCols {
		return fmt.Errorf("%w: %s: %s are %d×%d, more than %d columns; the first layer's weights scale with the columns (reduce the feature dimension)", ErrInconsistent, name, what, f.Rows, f.Cols, MaxFeatureCols)
	}
	return nil
}

// nonFinite finds the first NaN or ±Inf value (in row-major order).
func (f *Features) nonFinite() (row, col int, v float32, bad bool) {
	finite := func(x float32) bool { return !math.IsNaN(float64(x)) && !math.IsInf(float64(x), 0) }
	if f.Dense != nil {
		for i, x := range f.Dense {
			if !finite(x) {
				return i / f.Cols, i % f.Cols, x, true
			}
		}
		return 0, 0, 0, false
	}
	if f.Values == nil {
		return 0, 0, 0, false
	}
	for r := 0; r < f.Rows; r++ {
		for p := f.Indptr[r]; p < f.Indptr[r+1]; p++ {
			if x := f.Values[p]; !finite(x) {
				return r, int(f.Indices[p]), x, true
			}
		}
	}
	return 0, 0, 0, false
}

// rangeWarning describes the largest |value| when it is extreme: above
// extremeAbs, or above extremeRatio times the 99th percentile of the
// non-zero |values| (taken on a sample of at most 2^16).
func (f *Features) rangeWarning() string {
	vals := f.Dense
	if vals == nil {
		vals = f.Values
	}
	if len(vals) == 0 {
		return "" // binary
	}
	best, at := float32(0), -1
	for i, x := range vals {
		if a := float32(math.Abs(float64(x))); a > best {
			best, at = a, i
		}
	}
	if at < 0 {
		return ""
	}
	stride := max(1, len(vals)>>16)
	var s []float32
	for i := 0; i < len(vals); i += stride {
		if x := vals[i]; x != 0 {
			s = append(s, float32(math.Abs(float64(x))))
		}
	}
	slices.Sort(s)
	p99 := float32(0)
	if len(s) > 0 {
		p99 = s[min(len(s)-1, len(s)*99/100)]
	}
	if best <= extremeAbs && (p99 == 0 || best <= extremeRatio*p99) {
		return ""
	}
	r, c := 0, 0
	if f.Dense != nil {
		r, c = at/f.Cols, at%f.Cols
	} else {
		r = sortSearchRow(f.Indptr, at)
		c = int(f.Indices[at])
	}
	return fmt.Sprintf("feature value %g at row %d, column %d is extreme (99%% of |values| are below %g); it sets the quantization range, so rescale or clip the features", vals[at], r, c, p99)
}

// sortSearchRow is the row whose CSR range holds entry p.
func sortSearchRow(indptr []int32, p int) int {
	i, _ := slices.BinarySearch(indptr, int32(p)+1) // the first row start past p
	return i - 1
}
