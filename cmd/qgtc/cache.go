package main

import (
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

// The caches of infer and sweep: trained models under <cache>/models and
// partitions under <cache>/partitions. A model's file name and the file
// itself carry a key hashed from everything that shapes it (the data's
// contents, every training flag, qCacheVersion), so a changed dataset or
// flag trains a new model instead of reusing a stale one; files are
// checksummed, and one that fails its checksum is removed and rebuilt.

// qCacheVersion changes whenever what a key covers or how a cached model
// is trained changes, so older entries are never reused.
const qCacheVersion = 1

// qStderr receives infer's and sweep's progress, warnings and notes
// (a variable so tests can read them).
var qStderr io.Writer = os.Stderr

func qWarn(format string, args ...any) {
	fmt.Fprintf(qStderr, "qgtc: warning: "+format+"\n", args...)
}

func qNote(format string, args ...any) {
	fmt.Fprintf(qStderr, "qgtc: note: "+format+"\n", args...)
}

// qCacheDir is $QGTC_CACHE, else <user cache dir>/qgtc.
func qCacheDir() string {
	if d := os.Getenv("QGTC_CACHE"); d != "" {
		return d
	}
	if d, err := os.UserCacheDir(); err == nil {
		return filepath.Join(d, "qgtc")
	}
	return filepath.Join(os.TempDir(), "qgtc-cache")
}

// qFileName turns a dataset name (possibly a path) into a file name part.
func qFileName(name string) string {
	name = filepath.Base(name)
	return strings.Map(func(r rune) rune {
		if r == '/' || r == '\\' || r == ' ' || r < 32 {
			return '_'
		}
		return r
	}, name)
}

// qHasher feeds little-endian numbers to a hash through a buffer.
type qHasher struct {
	h   hash.Hash
	buf []byte
}

func (q *qHasher) flush() {
	q.h.Write(q.buf)
	q.buf = q.buf[:0]
}

func (q *qHasher) u64(v uint64) {
	if len(q.buf)+8 > cap(q.buf) {
		q.flush()
	}
	q.buf = binary.LittleEndian.AppendUint64(q.buf, v)
}

// tagged hashes a section name and length first, so that moving values
// from one section to the next changes the hash.
func (q *qHasher) tag(name string, n int) {
	q.flush()
	q.h.Write([]byte(name))
	q.u64(uint64(n))
}

func (q *qHasher) i32s(name string, v []int32) {
	q.tag(name, len(v))
	for _, x := range v {
		if len(q.buf)+4 > cap(q.buf) {
			q.flush()
		}
		q.buf = binary.LittleEndian.AppendUint32(q.buf, uint32(x))
	}
}

func (q *qHasher) f32s(name string, v []float32) {
	q.tag(name, len(v))
	for _, x := range v {
		if len(q.buf)+4 > cap(q.buf) {
			q.flush()
		}
		q.buf = binary.LittleEndian.AppendUint32(q.buf, math.Float32bits(x))
	}
}

// qDataFingerprint identifies the data a model learns from: the graph's
// CSR, the feature values, the labels and the train/val/test split (hex
// SHA-256, 128 bits).
func qDataFingerprint(ds *subgraph.Dataset) string {
	q := &qHasher{h: sha256.New(), buf: make([]byte, 0, 1<<16)}
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
	q.flush()
	return hex.EncodeToString(q.h.Sum(nil)[:16])
}

// Training settings that are not flags; they are part of every key.
const (
	qFP32LR, qFP32WD, qFP32Dropout, qFP32Patience = 0.01, 5e-4, 0.5, 50
	qQATLR, qQATWD, qQATPatience                  = 0.003, 5e-4, 15
	qCalibBatches                                 = 8
)

// qModelKey is everything a cached model depends on; its hash is the key.
type qModelKey struct {
	Version     int     `json:"version"`
	Format      string  `json:"format"` // the model file's own
	Data        string  `json:"data"`
	Kind        string  `json:"kind"`
	Norm        string  `json:"norm"`
	Scale       string  `json:"scale"`
	Hidden      int     `json:"hidden"`
	Layers      int     `json:"layers"`
	Parts       int     `json:"parts"`
	Batch       int     `json:"batch"`
	Seed        uint64  `json:"seed"`
	Epochs      int     `json:"epochs"`
	LR          float64 `json:"lr"`
	WD          float64 `json:"wd"`
	Dropout     float64 `json:"dropout"`
	Patience    int     `json:"patience"`
	ABits       int     `json:"abits,omitempty"` // the quantized model's
	WBits       int     `json:"wbits,omitempty"`
	Calib       int     `json:"calib,omitempty"`
	QATEpochs   int     `json:"qat_epochs,omitempty"`
	QATLR       float64 `json:"qat_lr,omitempty"`
	QATWD       float64 `json:"qat_wd,omitempty"`
	QATPatience int     `json:"qat_patience,omitempty"`
	LSQ         bool    `json:"lsq,omitempty"`
}

// modelKey returns the key of j's fp32 model (quant false) or of its model
// at j's bit widths; the fp32 model does not depend on the widths.
func (j *qjob) modelKey(quant bool) string {
	k := qModelKey{Version: qCacheVersion, Format: "qgtc.qmodel/3", Data: j.data, Kind: j.kind, Norm: j.norm, Scale: j.scale,
		Hidden: j.hidden, Layers: j.layers, Parts: j.parts, Batch: j.batch, Seed: j.seed, Epochs: j.epochs,
		LR: qFP32LR, WD: qFP32WD, Dropout: qFP32Dropout, Patience: qFP32Patience}
	if quant {
		k.ABits, k.WBits, k.Calib = j.abits, j.wbits, qCalibBatches
		k.QATEpochs, k.LSQ = j.qatEpochs, j.lsq
		k.QATLR, k.QATWD, k.QATPatience = qQATLR, qQATWD, qQATPatience
	}
	js, err := json.Marshal(k)
	if err != nil {
		panic(err) // a struct of numbers and strings always marshals
	}
	sum := sha256.Sum256(js)
	return hex.EncodeToString(sum[:16])
}

// modelPath is where j's model of stage ("fp32", "a4w4", ...) with key is
// cached.
func (j *qjob) modelPath(stage, key string) string {
	name := fmt.Sprintf("%s-%s-n%s-%s-%s.safetensors", qFileName(j.name), j.kind, j.norm, key[:16], stage)
	return filepath.Join(qCacheDir(), "models", name)
}

// origin is what a model of j records about its training.
func (j *qjob) origin(key string) *layers.Origin {
	return &layers.Origin{Dataset: j.dataset, Data: j.data, Kind: j.kind, ABits: j.abits, WBits: j.wbits,
		Norm: j.norm, FeatureScale: j.scale, Key: key}
}

// qLoadModel reads the model file at path and what it records about its
// training.
func qLoadModel(path string) (*layers.Model, *layers.Origin, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, nil, err
	}
	defer f.Close()
	return layers.ReadModelOrigin(f)
}

// qCachedModel returns the model cached at path for key, or nil when there
// is none or it cannot be opened. A file that does not load or holds
// another key is reported and removed, so the caller rebuilds it.
func qCachedModel(path, key string, ok func(*layers.Model) bool) *layers.Model {
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
		qWarn("cached model %s is corrupt (%v); removed, training again", path, err)
		return nil
	}
	return m
}

// saveModel caches m at path; a failure costs only time, so it is a note,
// and j remembers it so the summary does not claim the model is cached.
func (j *qjob) saveModel(path string, m *layers.Model, key string) {
	err := os.MkdirAll(filepath.Dir(path), 0o755)
	if err == nil {
		var f *atomicfile.File
		if f, err = atomicfile.Create(path, 0o644); err == nil {
			if _, err = layers.WriteModel(f, m, j.origin(key)); err == nil {
				err = f.Commit()
			}
			f.Abort()
		}
	}
	if err != nil {
		j.cacheErr = err
		j.cacheNote("model", err)
	}
}

// cacheNote says once per job that the cache could not be written: a
// cache folder that refuses one file refuses the next ones too.
func (j *qjob) cacheNote(what string, err error) {
	if !j.cacheNoted {
		qNote("could not cache the %s: %v", what, err)
		j.cacheNoted = true
	}
}

// qPartition returns the partition of ds into k parts with j's seed: the
// one cached by an earlier run when its file is sound and made for this
// graph, else computed now (a corrupt or mismatching file is reported and
// replaced).
func qPartition(j *qjob, ds *subgraph.Dataset, k int) ([]int32, bool, error) {
	g := ds.Graph
	opt := subgraph.PartitionOptions{Seed: j.seed}
	fp := subgraph.GraphFingerprint(g)
	path := filepath.Join(qCacheDir(), "partitions", fmt.Sprintf("%s-k%d-s%d-%016x.qgpart", qFileName(ds.Name), k, j.seed, fp.Hash))
	p, err := subgraph.LoadPartition(path, g, k, opt)
	if err == nil {
		return p.Parts, true, nil
	}
	if errors.Is(err, subgraph.ErrCacheCorrupt) || errors.Is(err, subgraph.ErrCacheMismatch) {
		os.Remove(path)
		qWarn("cached partition %s is unusable (%v); removed, partitioning again", path, strings.TrimPrefix(err.Error(), path+": "))
	}
	j.prog.Printf("qgtc: partitioning %s into %d parts", ds.Name, k)
	p, err = subgraph.Partition(g, k, opt)
	j.prog.Done()
	if err != nil {
		return nil, false, err
	}
	err = os.MkdirAll(filepath.Dir(path), 0o755)
	if err == nil {
		err = subgraph.SavePartition(path, g, p, opt)
	}
	if err != nil {
		j.cacheNote("partition", err)
	}
	return p.Parts, false, nil
}
