package pipeline

import (
	"bufio"
	"bytes"
	"container/heap"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"

	"github.com/qgtc/qgtc/internal/npy"
	"github.com/qgtc/qgtc/internal/safetensors"
	"github.com/qgtc/qgtc/layers"
)

// Sharded runs. A batch scheduler (a Slurm job array, a Kubernetes
// Indexed Job) runs shard i of n of the batch plan in each task; every
// task writes a shard file, and Merge checks the set and writes the
// whole graph's predictions in the format an unsharded run writes.
//
// The predictions file is a NumPy .npy (v1.0): one little-endian int32
// per node, in node order, −1 for a node in no batch; its data section
// hashes to Report.PredictionsSHA256.
//
// A shard file is a text header, one "key value" line each, ended by an
// empty line, then its (node id, prediction) pairs as little-endian
// int32, in node order:
//
//	qgtc-shard 1
//	model <the model's fingerprint, ModelFingerprint>
//	partition <the batch plan's fingerprint, PlanFingerprint>
//	data <the data's fingerprint, Fingerprint>
//	settings model=gcn abits=4 wbits=4 norm=none feature_scale=sqrt
//	shard <i> <n>
//	batches <of all batches> <first>-<last> (or "none")
//	nodes <of the graph> <pairs in this file>
//	sha256 <of the lines above and the pairs>
//
// The partition's batches are split into n contiguous runs (ShardRange),
// so each task's share depends only on i, n and the plan.

// shardMagic starts every shard file; its number is the format version.
const shardMagic = "qgtc-shard 1"

// maxShardHeader bounds a shard file's header: its lines are short.
const maxShardHeader = 4096

// ErrShard: a shard file or a set of them that cannot be merged.
var ErrShard = errors.New("pipeline: bad shard")

// Shard is shard Index of Count of a job's batches; Count 0 is the whole
// job.
type Shard struct{ Index, Count int }

// ParseShard reads "i/n" (0 ≤ i < n).
func ParseShard(s string) (Shard, error) {
	a, b, ok := strings.Cut(s, "/")
	i, err1 := strconv.Atoi(a)
	n, err2 := strconv.Atoi(b)
	if !ok || err1 != nil || err2 != nil || n < 1 || i < 0 || i >= n {
		return Shard{}, fmt.Errorf("%w: %q is not i/n with 0 <= i < n", ErrShard, s)
	}
	return Shard{i, n}, nil
}

func (s Shard) String() string { return fmt.Sprintf("%d/%d", s.Index, s.Count) }

// ShardRange returns the batches [lo, hi) of part i of n of nb batches:
// contiguous runs whose sizes differ by at most one (empty when n > nb).
// Sharded runs and several devices split a batch plan the same way.
func ShardRange(i, n, nb int) (lo, hi int) {
	return int(int64(i) * int64(nb) / int64(n)), int(int64(i+1) * int64(nb) / int64(n))
}

// ModelFingerprint identifies a quantized model by what its file holds
// (the weights and quantization parameters, not when or from what it was
// saved): hex SHA-256, 128 bits.
func ModelFingerprint(m *layers.Model) (string, error) {
	var buf bytes.Buffer
	if _, err := layers.WriteModel(&buf, m, nil); err != nil {
		return "", err
	}
	_, meta, err := safetensors.Read(&buf)
	if err != nil {
		return "", err
	}
	sum := meta["qgtc.sha256"]
	if len(sum) < 32 {
		return "", fmt.Errorf("pipeline: the model file records no checksum")
	}
	return sum[:32], nil
}

// PlanFingerprint identifies the batch plan d runs: the graph's size and
// every batch's nodes in order (hex SHA-256, 128 bits).
func PlanFingerprint(d *layers.Data) string {
	q := newPlanHash(d.Graph.N(), len(d.Eval))
	for _, b := range d.Eval {
		q.i32s("batch", b.Nodes)
	}
	return hex.EncodeToString(q.sum16())
}

// newPlanHash starts PlanFingerprint's hash of a plan of nb batches over n
// nodes; each batch's nodes follow in order, q.i32s("batch", nodes).
func newPlanHash(n, nb int) *hasher {
	q := &hasher{h: sha256.New(), buf: make([]byte, 0, 1<<16)}
	q.tag("plan", 2)
	q.u64(uint64(n))
	q.u64(uint64(nb))
	return q
}

// ShardHeader is what a shard file says of itself.
type ShardHeader struct {
	Model, Partition, Data string // fingerprints
	Settings               string // the flags that shape the predictions
	Shard                  Shard
	Batches                int // in the whole plan
	First, Last            int // the batches it ran, First > Last when none
	Nodes                  int // of the graph
	Pairs                  int // (node, prediction) pairs it holds
}

func batchSpan(first, last int) string {
	if first > last {
		return "none"
	}
	return fmt.Sprintf("%d-%d", first, last)
}

// text is the header's lines up to the checksum's.
func (h *ShardHeader) text() string {
	span := batchSpan(h.First, h.Last)
	return fmt.Sprintf("%s\nmodel %s\npartition %s\ndata %s\nsettings %s\nshard %d %d\nbatches %d %s\nnodes %d %d\n",
		shardMagic, h.Model, h.Partition, h.Data, h.Settings, h.Shard.Index, h.Shard.Count, h.Batches, span, h.Nodes, h.Pairs)
}

// shardSettings is the settings line of j's runs: what shapes the
// predictions besides the model, the plan and the data.
func (j *Job) shardSettings() string {
	return fmt.Sprintf("model=%s abits=%d wbits=%d norm=%s feature_scale=%s", j.Model, j.ABits, j.WBits, j.Norm, j.FeatureScale)
}

// shardData is d with only the batches of j's shard (d itself when the
// job is whole), and the shard's first and last batch.
func (j *Job) shardData(d *Data) (sd *Data, first, last int) {
	nb := len(d.Batches.Eval)
	if j.Shard.Count == 0 {
		return d, 0, nb - 1
	}
	lo, hi := ShardRange(j.Shard.Index, j.Shard.Count, nb)
	b := *d.Batches
	b.Eval = d.Batches.Eval[lo:hi]
	c := *d
	c.Batches = &b
	return &c, lo, hi - 1
}

// writeOut writes the run's predictions to j.Out: the whole graph's, or
// j's shard file of sd's batches (d's plan split by ShardRange), whose
// model fingerprint it returns.
func (j *Job) writeOut(d, sd *Data, m *layers.Model, pred []int32, first, last int) (string, error) {
	pred = d.loadedPred(pred)
	if j.Shard.Count == 0 {
		return "", WritePredictions(j.Out, pred)
	}
	mf, err := ModelFingerprint(m)
	if err != nil {
		return "", err
	}
	h := ShardHeader{Model: mf, Partition: PlanFingerprint(d.Batches), Data: d.Fingerprint, Settings: j.shardSettings(),
		Shard: j.Shard, Batches: len(d.Batches.Eval), First: first, Last: last, Nodes: len(pred)}
	return mf, writeShard(j.Out, h, sd, pred)
}

// writeShard writes pred's entries (over the loaded graph's nodes) for the
// nodes of sd's batches to path as a shard file.
func writeShard(path string, h ShardHeader, sd *Data, pred []int32) error {
	covered := make([]bool, len(pred))
	for _, b := range sd.Batches.Eval {
		for _, v := range b.Nodes {
			covered[sd.loadedNode(v)] = true
		}
	}
	n := 0
	for _, ok := range covered {
		if ok {
			n++
		}
	}
	body := make([]byte, 0, 8*n)
	for v, ok := range covered {
		if ok {
			body = binary.LittleEndian.AppendUint32(body, uint32(v))
			body = binary.LittleEndian.AppendUint32(body, uint32(pred[v]))
		}
	}
	h.Pairs = len(body) / 8
	head := h.text()
	sum := sha256.New()
	sum.Write([]byte(head))
	sum.Write(body)
	return writeCacheFile(path, func(w io.Writer) error {
		if _, err := fmt.Fprintf(w, "%ssha256 %x\n\n", head, sum.Sum(nil)); err != nil {
			return err
		}
		_, err := w.Write(body)
		return err
	})
}

// WritePredictions writes pred (a class per node, −1 for none) to path as
// a .npy of int32, through a temporary file renamed into place.
func WritePredictions(path string, pred []int32) error {
	return writeNPY(path, len(pred), func(put func(int32) error) error {
		for _, p := range pred {
			if err := put(p); err != nil {
				return err
			}
		}
		return nil
	})
}

// writeNPY writes a .npy of n int32 at path atomically, the values from
// fill, which must put exactly n.
func writeNPY(path string, n int, fill func(put func(int32) error) error) error {
	return writeCacheFile(path, func(w io.Writer) error {
		if _, err := w.Write(npy.Header("<i4", n)); err != nil {
			return err
		}
		var b [4]byte
		count := 0
		err := fill(func(v int32) error {
			count++
			binary.LittleEndian.PutUint32(b[:], uint32(v))
			_, err := w.Write(b[:])
			return err
		})
		if err == nil && count != n {
			err = fmt.Errorf("pipeline: %d predictions for %d nodes", count, n)
		}
		return err
	})
}

// ReadPredictions reads a file WritePredictions wrote; a file of another
// layout, or whose size disagrees with its header, is an error (read
// after its size is checked, so a short file never asks for more).
func ReadPredictions(path string) ([]int32, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	br := bufio.NewReader(f)
	pre := make([]byte, 10)
	if _, err := io.ReadFull(br, pre); err != nil || string(pre[:8]) != "\x93NUMPY\x01\x00" {
		return nil, fmt.Errorf("%s: not a .npy v1.0 predictions file", path)
	}
	hl := int(binary.LittleEndian.Uint16(pre[8:]))
	dict := make([]byte, hl)
	if _, err := io.ReadFull(br, dict); err != nil {
		return nil, fmt.Errorf("%s: truncated .npy header", path)
	}
	var n int
	_, err = fmt.Sscanf(string(dict), "{'descr': '<i4', 'fortran_order': False, 'shape': (%d,), }", &n)
	if err != nil || n < 0 || n > math.MaxInt32 || !bytes.Equal(append(pre, dict...), npy.Header("<i4", n)) {
		return nil, fmt.Errorf("%s: not a predictions file (a one-dimensional int32 .npy as qgtc writes it)", path)
	}
	if want := int64(10+hl) + 4*int64(n); st.Size() != want {
		return nil, fmt.Errorf("%s: %d bytes, its header says %d", path, st.Size(), want)
	}
	b := make([]byte, 4*n)
	if _, err := io.ReadFull(br, b); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	pred := make([]int32, n)
	for i := range pred {
		pred[i] = int32(binary.LittleEndian.Uint32(b[4*i:]))
	}
	return pred, nil
}

// shardFile is a shard file read and checked by itself.
type shardFile struct {
	path  string
	h     ShardHeader
	pairs []byte // (node, prediction) pairs, little-endian int32
}

// readShard reads and checks the shard file at path: its header, its size
// (a truncated file is caught before its pairs are read) and checksum,
// and its pairs (nodes in the graph, increasing).
func readShard(path string) (*shardFile, error) {
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: shard file %s: %s", ErrShard, path, fmt.Sprintf(format, args...))
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("%w: shard file %s: %w", ErrShard, path, err)
	}
	defer f.Close()
	st, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("%w: shard file %s: %w", ErrShard, path, err)
	}
	br := bufio.NewReader(io.LimitReader(f, st.Size()))
	var head strings.Builder
	lines := map[string]string{}
	var sum string
	for {
		line, err := br.ReadString('\n')
		if err != nil || head.Len()+len(line) > maxShardHeader {
			return nil, bad("no shard header (not a shard file, or truncated)")
		}
		if line == "\n" {
			break
		}
		k, v, _ := strings.Cut(strings.TrimSuffix(line, "\n"), " ")
		if k == "sha256" {
			sum = v
			continue
		}
		if sum != "" {
			return nil, bad("header line %q after its checksum", k)
		}
		if head.Len() == 0 && line != shardMagic+"\n" {
			return nil, bad("not a shard file of this version (want %q first)", shardMagic)
		}
		head.WriteString(line)
		lines[k] = v
	}
	h := ShardHeader{Model: lines["model"], Partition: lines["partition"], Data: lines["data"], Settings: lines["settings"]}
	var span string
	if _, err := fmt.Sscanf(lines["shard"], "%d %d", &h.Shard.Index, &h.Shard.Count); err != nil {
		return nil, bad("shard line %q", lines["shard"])
	}
	if _, err := fmt.Sscanf(lines["batches"], "%d %s", &h.Batches, &span); err != nil {
		return nil, bad("batches line %q", lines["batches"])
	}
	if span == "none" {
		h.First, h.Last = 0, -1
	} else if _, err := fmt.Sscanf(span, "%d-%d", &h.First, &h.Last); err != nil {
		return nil, bad("batches line %q", lines["batches"])
	}
	if _, err := fmt.Sscanf(lines["nodes"], "%d %d", &h.Nodes, &h.Pairs); err != nil {
		return nil, bad("nodes line %q", lines["nodes"])
	}
	switch {
	case h.Model == "" || h.Partition == "" || h.Data == "" || h.Settings == "":
		return nil, bad("a fingerprint or the settings are missing")
	case h.Shard.Count < 1 || h.Shard.Index < 0 || h.Shard.Index >= h.Shard.Count:
		return nil, bad("shard %d of %d", h.Shard.Index, h.Shard.Count)
	case h.Nodes < 0 || h.Nodes > math.MaxInt32 || h.Pairs < 0 || h.Pairs > h.Nodes:
		return nil, bad("%d pairs for %d nodes", h.Pairs, h.Nodes)
	case h.Batches < 0:
		return nil, bad("%d batches", h.Batches)
	}
	lo, hi := ShardRange(h.Shard.Index, h.Shard.Count, h.Batches)
	if span == "none" && lo == hi {
		h.First, h.Last = lo, lo-1
	}
	if h.First != lo || h.Last != hi-1 {
		return nil, bad("it holds batches %s, shard %v of %d batches is %s", span, h.Shard, h.Batches, batchSpan(lo, hi-1))
	}
	bodyAt := int64(head.Len() + len("sha256 \n\n") + len(sum))
	if got, want := st.Size()-bodyAt, 8*int64(h.Pairs); got != want {
		return nil, bad("truncated or padded: %d bytes of pairs, its header says %d", got, want)
	}
	body := make([]byte, 8*h.Pairs)
	if _, err := io.ReadFull(br, body); err != nil {
		return nil, bad("%v", err)
	}
	s := sha256.New()
	s.Write([]byte(head.String()))
	s.Write(body)
	if hex.EncodeToString(s.Sum(nil)) != sum {
		return nil, bad("checksum mismatch (the file is corrupt)")
	}
	prev := int64(-1)
	for i := 0; i < len(body); i += 8 {
		v := int64(int32(binary.LittleEndian.Uint32(body[i:])))
		if v <= prev || v >= int64(h.Nodes) {
			return nil, bad("node %d out of order or outside the %d nodes", v, h.Nodes)
		}
		prev = v
	}
	return &shardFile{path: path, h: h, pairs: body}, nil
}

// Merge checks that files hold every shard 0..n−1 of one run exactly once
// (the same model, batch plan, data, settings and n), each complete, and
// writes the whole graph's predictions to out as WritePredictions would.
// The first problem found is one error naming the shard file at fault (or,
// for a missing shard, the shard); nothing is written then.
func Merge(out string, files []string) error {
	if len(files) == 0 {
		return fmt.Errorf("%w: no shard files to merge", ErrShard)
	}
	shards := make([]*shardFile, len(files))
	for i, path := range files {
		s, err := readShard(path)
		if err != nil {
			return err
		}
		shards[i] = s
	}
	// The reference is the value most files hold, so the file named is the
	// odd one out (the first file when all differ).
	for _, f := range []struct {
		what string
		get  func(*ShardHeader) string
	}{
		{"model", func(h *ShardHeader) string { return h.Model }},
		{"data", func(h *ShardHeader) string { return h.Data }},
		{"partition", func(h *ShardHeader) string { return h.Partition }},
		{"settings", func(h *ShardHeader) string { return h.Settings }},
		{"shard count", func(h *ShardHeader) string { return strconv.Itoa(h.Shard.Count) }},
		{"batch count", func(h *ShardHeader) string { return strconv.Itoa(h.Batches) }},
		{"node count", func(h *ShardHeader) string { return strconv.Itoa(h.Nodes) }},
	} {
		count := map[string]int{}
		ref := ""
		for _, s := range shards {
			v := f.get(&s.h)
			count[v]++
			if count[v] > count[ref] {
				ref = v
			}
		}
		for _, s := range shards {
			if v := f.get(&s.h); v != ref {
				return fmt.Errorf("%w: shard file %s is from another run: its %s is %s, the other shards' %s", ErrShard, s.path, f.what, v, ref)
			}
		}
	}
	h0 := shards[0].h
	by := make([]*shardFile, h0.Shard.Count)
	for _, s := range shards {
		if o := by[s.h.Shard.Index]; o != nil {
			return fmt.Errorf("%w: shard file %s repeats shard %v, already in shard file %s", ErrShard, s.path, s.h.Shard, o.path)
		}
		by[s.h.Shard.Index] = s
	}
	for i, s := range by {
		if s == nil {
			lo, hi := ShardRange(i, h0.Shard.Count, h0.Batches)
			return fmt.Errorf("%w: shard %d/%d (batches %d-%d) is missing: no shard file given holds it", ErrShard, i, h0.Shard.Count, lo, hi-1)
		}
	}
	// Every batch is in exactly one shard (ShardRange, checked per file),
	// and each shard's pairs are in node order: a k-way merge writes them,
	// with −1 between, in memory of the shards' size whatever the header
	// claims; a node two shards predict means batches that overlap.
	hp := make(shardHeap, 0, len(by))
	for _, s := range by {
		if len(s.pairs) > 0 {
			hp = append(hp, &shardCursor{s: s})
		}
	}
	heap.Init(&hp)
	err := writeNPY(out, h0.Nodes, func(put func(int32) error) error {
		next := 0 // the next node to write
		var last *shardFile
		for hp.Len() > 0 {
			c := hp[0]
			v := c.node()
			if v < next {
				return fmt.Errorf("%w: shard file %s predicts node %d, as shard file %s does", ErrShard, c.s.path, v, last.path)
			}
			for ; next < v; next++ {
				if err := put(-1); err != nil {
					return err
				}
			}
			if err := put(int32(binary.LittleEndian.Uint32(c.s.pairs[c.at+4:]))); err != nil {
				return err
			}
			next, last = v+1, c.s
			if c.at += 8; c.at == len(c.s.pairs) {
				heap.Pop(&hp)
			} else {
				heap.Fix(&hp, 0)
			}
		}
		for ; next < h0.Nodes; next++ {
			if err := put(-1); err != nil {
				return err
			}
		}
		return nil
	})
	if err != nil && !errors.Is(err, ErrShard) {
		return fmt.Errorf("writing %s: %w", out, err)
	}
	return err
}

// shardCursor is a shard file's next pair in Merge.
type shardCursor struct {
	s  *shardFile
	at int // byte offset of the next pair
}

func (c *shardCursor) node() int { return int(int32(binary.LittleEndian.Uint32(c.s.pairs[c.at:]))) }

// shardHeap orders cursors by their next node.
type shardHeap []*shardCursor

func (h shardHeap) Len() int           { return len(h) }
func (h shardHeap) Less(i, j int) bool { return h[i].node() < h[j].node() }
func (h shardHeap) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *shardHeap) Push(x any)        { *h = append(*h, x.(*shardCursor)) }
func (h *shardHeap) Pop() any {
	old := *h
	c := old[len(old)-1]
	*h = old[:len(old)-1]
	return c
}

// coveredTest is the test nodes among sd's batches' nodes.
func coveredTest(sd *Data) []int32 {
	in := make([]bool, sd.Dataset.Graph.N())
	for _, b := range sd.Batches.Eval {
		for _, v := range b.Nodes {
			in[v] = true
		}
	}
	return slices.DeleteFunc(slices.Clone(sd.Dataset.Test), func(v int32) bool { return !in[v] })
}
