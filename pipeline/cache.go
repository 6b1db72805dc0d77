package pipeline

import (
	"bufio"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"hash"
	"io"
	"math"
	"os"
	"path/filepath"
	"strings"

	"github.com/qgtc/qgtc/internal/atomicfile"
	"github.com/qgtc/qgtc/layers"
	"github.com/qgtc/qgtc/subgraph"
)

// The cache under Job.CacheDir: trained models in models/ and partitions
// in partitions/. A model's file name and the file itself carry a key
// hashed from everything that shapes it (the data's contents, every
// training setting, cacheVersion), so a changed dataset or setting trains
// a new model instead of reusing a stale one; files are checksummed, and
// one that fails its checksum is removed and rebuilt.

// cacheVersion changes whenever what a key covers or how a cached model
// is trained changes, so older entries are never reused.
const cacheVersion = 2

// fileName turns a dataset name (possibly a path) into a file name part.
func fileName(name string) string {
	name = filepath.Base(name)
	return strings.Map(func(r rune) rune {
		if r == '/' || r == '\\' || r == ' ' || r < 32 {
			return '_'
		}
		return r
	}, name)
}

// hasher feeds little-endian numbers to a hash through a buffer.
type hasher struct {
	h   hash.Hash
	buf []byte
}

func (q *hasher) flush() {
	q.h.Write(q.buf)
	q.buf = q.buf[:0]
}

// sum16 is the hash of what q was given: its first 16 bytes (128 bits).
func (q *hasher) sum16() []byte {
	q.flush()
	return q.h.Sum(nil)[:16]
}

func (q *hasher) u64(v uint64) {
	if len(q.buf)+8 > cap(q.buf) {
		q.flush()
	}
	q.buf = binary.LittleEndian.AppendUint64(q.buf, v)
}

// tag hashes a section name and length first, so that moving values from
// one section to the next changes the hash.
func (q *hasher) tag(name string, n int) {
	q.flush()
	q.h.Write([]byte(name))
	q.u64(uint64(n))
}

func (q *hasher) i32s(name string, v []int32) {
	q.tag(name, len(v))
	for _, x := range v {
		if len(q.buf)+4 > cap(q.buf) {
			q.flush()
		}
		q.buf = binary.LittleEndian.AppendUint32(q.buf, uint32(x))
	}
}

func (q *hasher) f32s(name string, v []float32) {
	q.tag(name, len(v))
	for _, x := range v {
		if len(q.buf)+4 > cap(q.buf) {
			q.flush()
		}
		q.buf = binary.LittleEndian.AppendUint32(q.buf, math.Float32bits(x))
	}
}

// Fingerprint identifies the data a model learns from: the graph's CSR,
// the feature values, the labels and the train/val/test split (hex
// SHA-256, 128 bits). Saved models record it (layers.Origin.Data).
func Fingerprint(ds *subgraph.Dataset) string {
	q := &hasher{h: sha256.New(), buf: make([]byte, 0, 1<<16)}
	g := subgraph.GraphFingerprint(ds.Graph)
	q.tag("graph", 3)
	q.u64(uint64(g.Nodes))
	q.u64(uint64(g.Edges))
	q.u64(g.Hash)
	if f := ds.Features; f != nil {
		q.tag("features", 2)
		q.u64(uint64(f.Rows))
		q.u64(uint64(f.Cols))
		q.f32s("dense", f.Dense)
		q.i32s("indptr", f.Indptr)
		q.i32s("indices", f.Indices)
		if f.Values != nil {
			q.f32s("values", f.Values)
		}
	}
	q.tag("classes", 1)
	q.u64(uint64(ds.NumClasses))
	q.i32s("labels", ds.Labels)
	q.i32s("train", ds.Train)
	q.i32s("val", ds.Val)
	q.i32s("test", ds.Test)
	return hex.EncodeToString(q.sum16())
}

// calibBatches is the calibration's batch count; it is part of every
// quantized model's key.
const calibBatches = 8

// modelKey is everything a cached model depends on; its hash is the key.
type modelKey struct {
	Version     int     `json:"version"`
	Format      string  `json:"format"` // the model file's own
	Data        string  `json:"data"`
	Kind        string  `json:"kind"`
	Norm        string  `json:"norm"`
	Aggr        string  `json:"aggr,omitempty"` // a GIN's, when it averages: earlier keys stay valid
	Scale       string  `json:"scale"`
	Hidden      int     `json:"hidden"`
	Layers      int     `json:"layers"`
	Parts       int     `json:"parts"`
	Partition   string  `json:"partition,omitempty"` // Data.PartitionSum
	Batch       int     `json:"batch"`
	Seed        uint64  `json:"seed"`
	Epochs      int     `json:"epochs"`
	LR          float64 `json:"lr"`
	WD          float64 `json:"wd"`
	Dropout     float64 `json:"dropout"`
	KeepInput   bool    `json:"keep_input,omitempty"` // omitted when false: earlier keys stay valid
	Patience    int     `json:"patience"`
	PreciseBN   bool    `json:"precise_bn"`      // layers.TrainConfig.PreciseBN
	ABits       int     `json:"abits,omitempty"` // the quantized model's
	WBits       int     `json:"wbits,omitempty"`
	Calib       int     `json:"calib,omitempty"`
	QATEpochs   int     `json:"qat_epochs,omitempty"`
	QATLR       float64 `json:"qat_lr,omitempty"`
	QATWD       float64 `json:"qat_wd,omitempty"`
	QATPatience int     `json:"qat_patience,omitempty"`
	QATDistill  float64 `json:"qat_distill,omitempty"`
	LSQ         bool    `json:"lsq,omitempty"`
	ChannelZ    bool    `json:"channel_z,omitempty"`
	SignW       bool    `json:"sign_w,omitempty"`
	LastBits    int     `json:"last_bits,omitempty"`
}

// modelKey returns the key of j's fp32 model on d (quant false) or of its
// model at j's bit widths; the fp32 model does not depend on the widths.
func (j *Job) modelKey(d *Data, quant bool) string {
	k := modelKey{Version: cacheVersion, Format: "qgtc.qmodel/3", Data: d.Fingerprint, Kind: j.Model, Norm: j.Norm, Scale: j.FeatureScale,
		Hidden: j.Hidden, Layers: j.Layers, Parts: d.Parts, Partition: d.PartitionSum, Batch: j.Batch, Seed: j.Seed, Epochs: j.Epochs,
		LR: j.LR, WD: j.WeightDecay, Dropout: j.Dropout, KeepInput: j.KeepInput, Patience: j.Patience, PreciseBN: true}
	if j.ginMean() {
		k.Aggr = layers.AggrMean
	}
	if quant {
		k.ABits, k.WBits, k.Calib = j.ABits, j.WBits, calibBatches
		k.QATEpochs, k.LSQ, k.ChannelZ, k.SignW, k.LastBits = j.QATEpochs, j.LSQ, j.channelZ(), j.signWeights(), j.lastBits()
		k.QATLR, k.QATWD, k.QATPatience, k.QATDistill = j.QATLR, j.QATWeightDecay, j.QATPatience, j.QATDistill
	}
	js, err := json.Marshal(k)
	if err != nil {
		panic(err) // a struct of numbers and strings always marshals
	}
	sum := sha256.Sum256(js)
	return hex.EncodeToString(sum[:16])
}

// modelPath is where j's model of stage ("fp32", "a4w4", ...) with key is
// cached, "" without a cache.
func (j *Job) modelPath(d *Data, stage, key string) string {
	if j.CacheDir == "" {
		return ""
	}
	name := fmt.Sprintf("%s-%s-n%s-%s-%s.safetensors", fileName(d.Dataset.Name), j.Model, j.Norm, key[:16], stage)
	return filepath.Join(j.CacheDir, "models", name)
}

// origin is what a model of j trained on d records.
func (j *Job) origin(d *Data, key string) *layers.Origin {
	return &layers.Origin{Dataset: j.Dataset, Data: d.Fingerprint, Kind: j.Model, ABits: j.ABits, WBits: j.WBits,
		Norm: j.Norm, FeatureScale: j.FeatureScale, Key: key}
}

// cachedModel returns the model cached at path for key, or nil when there
// is none or it cannot be opened. A file that does not load or holds
// another key is reported and removed, so the caller rebuilds it.
func (j *Job) cachedModel(path, key string, ok func(*layers.Model) bool) *layers.Model {
	if path == "" {
		return nil
	}
	f, err := os.Open(path)
	if err != nil {
		return nil // missing, or an unusable cache folder that saving will report
	}
	m, o, err := layers.ReadModelOrigin(f)
	f.Close()
	if err == nil {
		switch {
		case o == nil:
			err = errors.New("it records no cache key")
		case o.Key != key:
			err = fmt.Errorf("it records cache key %s, want %s", o.Key, key)
		case !ok(m):
			err = errors.New("its model does not fit the data")
		}
	}
	if err != nil {
		os.Remove(path)
		j.warn("cached model %s is corrupt (%v); removed, training again", path, err)
		return nil
	}
	return m
}

// saveModel caches m at path; a failure costs only time, so it is a note,
// and j remembers it so that reports do not claim the model is cached.
func (j *Job) saveModel(d *Data, path string, m *layers.Model, key string) {
	if path == "" {
		return
	}
	err := writeCacheFile(path, func(w io.Writer) error {
		_, err := layers.WriteModel(w, m, j.origin(d, key))
		return err
	})
	if err != nil {
		j.cacheErr = err
		j.cacheNote("model", err)
	}
}

// cacheNote says once per job that the cache could not be written: a
// cache folder that refuses one file refuses the next ones too.
func (j *Job) cacheNote(what string, err error) {
	if !j.cacheNoted {
		j.note("could not cache the %s: %v", what, err)
		j.cacheNoted = true
	}
}

// partition returns the partition of ds into k parts with j's seed: the
// one cached by an earlier run when its file is sound and made for this
// graph, else computed now (a corrupt or mismatching file is reported and
// replaced).
func (j *Job) partition(ds *subgraph.Dataset, k int) ([]int32, bool, error) {
	g := ds.Graph
	opt := subgraph.PartitionOptions{Seed: j.Seed}
	path := ""
	if j.CacheDir != "" {
		fp := subgraph.GraphFingerprint(g)
		path = filepath.Join(j.CacheDir, "partitions", fmt.Sprintf("%s-k%d-s%d-%016x.qgpart", fileName(ds.Name), k, j.Seed, fp.Hash))
		p, err := subgraph.LoadPartition(path, g, k, opt)
		if err == nil {
			return p.Parts, true, nil
		}
		if errors.Is(err, subgraph.ErrCacheCorrupt) || errors.Is(err, subgraph.ErrCacheMismatch) {
			os.Remove(path)
			j.warn("cached partition %s is unusable (%v); removed, partitioning again", path, strings.TrimPrefix(err.Error(), path+": "))
		}
	}
	j.Progress.Printf("qgtc: partitioning %s into %d parts", ds.Name, k)
	popt := opt // a 1M-node graph takes a minute: say how it gets on
	popt.Progress = func(phase string, done, total int) {
		j.Progress.Printf("qgtc: partitioning %s: %s, %d%%", ds.Name, phase, int(100*int64(done)/max(1, int64(total))))
	}
	p, err := subgraph.Partition(g, k, popt)
	j.Progress.Done()
	if err != nil {
		return nil, false, err
	}
	if path != "" {
		err := writeCacheFile(path, func(w io.Writer) error { return subgraph.WritePartitionFile(w, g, p, opt) })
		if err != nil {
			j.cacheNote("partition", err)
		}
	}
	return p.Parts, false, nil
}

// writeCacheFile writes a cache entry at path (its folder made when
// missing) through a temporary file, renamed over path once write
// succeeds and removed on an error or a signal, so that an interrupted
// run leaves no partial entry and no stray temporary file.
func writeCacheFile(path string, write func(io.Writer) error) error {
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		return err
	}
	f, err := atomicfile.Create(path, 0o644)
	if err != nil {
		return err
	}
	defer f.Abort()
	bw := bufio.NewWriterSize(f, 1<<16)
	if err := write(bw); err != nil {
		return err
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	return f.Commit()
}

// partsSum is a SHA-256 prefix of parts as little-endian int32.
func partsSum(parts []int32) string {
	h := sha256.New()
	b := make([]byte, 4*len(parts))
	for i, p := range parts {
		binary.LittleEndian.PutUint32(b[4*i:], uint32(p))
	}
	h.Write(b)
	return hex.EncodeToString(h.Sum(nil)[:16])
}
