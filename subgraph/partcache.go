package subgraph

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"os"
	"path/filepath"
)

// Partition cache errors.
var (
	// ErrCacheCorrupt: the file is truncated, has a bad magic, version or
	// checksum, or holds values that cannot be a partition.
	ErrCacheCorrupt = errors.New("subgraph: corrupt partition file")
	// ErrCacheMismatch: a sound file made for another graph, K, seed or
	// imbalance.
	ErrCacheMismatch = errors.New("subgraph: partition file does not match")
)

// Partition file, version 1, little-endian:
//
//	off  size  field
//	0    8     magic "QGTCPART"
//	8    4     version (1)
//	12   4     K
//	16   8     graph nodes
//	24   8     graph stored edges (CSR entries)
//	32   8     graph CSR hash (FNV-1a 64 of indptr then indices as LE int32)
//	40   8     seed
//	48   8     imbalance (float64 bits; the default stored as 1.03)
//	56   4·N   part of each node (uint32)
//	end  4     CRC-32C of every byte before it
const (
	PartFileVersion = 1
	partHeader      = 56
)

var partMagic = [8]byte{'Q', 'G', 'T', 'C', 'P', 'A', 'R', 'T'}

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

// Fingerprint identifies a graph: its sizes and a hash of its CSR.
type Fingerprint struct {
	Nodes, Edges int64
	Hash         uint64
}

func (f Fingerprint) String() string {
	return fmt.Sprintf("%d nodes, %d edges, CSR hash %016x", f.Nodes, f.Edges, f.Hash)
}

// GraphFingerprint hashes g's CSR (FNV-1a 64 over indptr then indices,
// each as a little-endian int32).
func GraphFingerprint(g *Graph) Fingerprint {
	const prime = 1099511628211
	h := uint64(14695981039346656037)
	mix := func(xs []int32) {
		for _, x := range xs {
			u := uint32(x)
			for i := 0; i < 4; i++ {
				h ^= uint64(u & 0xff)
				h *= prime
				u >>= 8
			}
		}
	}
	mix(g.Indptr)
	mix(g.Indices)
	return Fingerprint{Nodes: int64(g.N()), Edges: int64(g.NumEdges()), Hash: h}
}

// PartitionFile is the content of a partition cache file.
type PartitionFile struct {
	Graph     Fingerprint
	K         int
	Seed      uint64
	Imbalance float64
	Parts     []int32
}

// Partitioning returns the stored partition.
func (f *PartitionFile) Partitioning() *Partitioning {
	return &Partitioning{K: f.K, Parts: f.Parts, Seed: f.Seed}
}

// Match checks that f was computed for g with k parts, opt's seed and
// imbalance; the error names every field that differs.
func (f *PartitionFile) Match(g *Graph, k int, opt PartitionOptions) error {
	fp := GraphFingerprint(g)
	var msg string
	if f.Graph != fp {
		msg += fmt.Sprintf("; graph: file has %v, this graph has %v", f.Graph, fp)
	}
	if f.K != k {
		msg += fmt.Sprintf("; K: file has %d, want %d", f.K, k)
	}
	if f.Seed != opt.Seed {
		msg += fmt.Sprintf("; seed: file has %d, want %d", f.Seed, opt.Seed)
	}
	if ub := effectiveImbalance(opt); f.Imbalance != ub {
		msg += fmt.Sprintf("; imbalance: file has %g, want %g", f.Imbalance, ub)
	}
	if msg != "" {
		return fmt.Errorf("%w%s", ErrCacheMismatch, msg)
	}
	return nil
}

// WritePartitionFile writes p, computed on g with opt, as a partition file.
func WritePartitionFile(w io.Writer, g *Graph, p *Partitioning, opt PartitionOptions) error {
	if err := p.Check(g); err != nil {
		return err
	}
	fp := GraphFingerprint(g)
	crc := crc32.New(castagnoli)
	bw := bufio.NewWriterSize(io.MultiWriter(w, crc), 1<<16)
	var head [partHeader]byte
	le := binary.LittleEndian
	copy(head[:], partMagic[:])
	le.PutUint32(head[8:], PartFileVersion)
	le.PutUint32(head[12:], uint32(p.K))
	le.PutUint64(head[16:], uint64(fp.Nodes))
	le.PutUint64(head[24:], uint64(fp.Edges))
	le.PutUint64(head[32:], fp.Hash)
	le.PutUint64(head[40:], opt.Seed)
	le.PutUint64(head[48:], math.Float64bits(effectiveImbalance(opt)))
	bw.Write(head[:])
	var b [4]byte
	for _, q := range p.Parts {
		le.PutUint32(b[:], uint32(q))
		bw.Write(b[:])
	}
	if err := bw.Flush(); err != nil {
		return err
	}
	le.PutUint32(b[:], crc.Sum32())
	_, err := w.Write(b[:])
	return err
}

// ReadPartitionFile reads and verifies a partition file: magic, version,
// checksum, and every part below K. It does not compare it with a graph
// (see Match).
func ReadPartitionFile(r io.Reader) (*PartitionFile, error) {
	crc := crc32.New(castagnoli)
	br := bufio.NewReaderSize(r, 1<<16)
	tr := io.TeeReader(br, crc)
	var head [partHeader]byte
	if _, err := io.ReadFull(tr, head[:]); err != nil {
		return nil, fmt.Errorf("%w: header: %v", ErrCacheCorrupt, err)
	}
	if [8]byte(head[:8]) != partMagic {
		return nil, fmt.Errorf("%w: magic %q, want %q", ErrCacheCorrupt, head[:8], partMagic[:])
	}
	le := binary.LittleEndian
	if v := le.Uint32(head[8:]); v != PartFileVersion {
		return nil, fmt.Errorf("%w: version %d, this reader knows %d", ErrCacheCorrupt, v, PartFileVersion)
	}
	f := &PartitionFile{
		K:         int(le.Uint32(head[12:])),
		Graph:     Fingerprint{Nodes: int64(le.Uint64(head[16:])), Edges: int64(le.Uint64(head[24:])), Hash: le.Uint64(head[32:])},
		Seed:      le.Uint64(head[40:]),
		Imbalance: math.Float64frombits(le.Uint64(head[48:])),
	}
	n := f.Graph.Nodes
	if n < 1 || n > 1<<31-2 || f.Graph.Edges < 0 || f.Graph.Edges > 1<<31-1 {
		return nil, fmt.Errorf("%w: graph of %d nodes and %d edges", ErrCacheCorrupt, n, f.Graph.Edges)
	}
	if f.K < 1 || int64(f.K) > n {
		return nil, fmt.Errorf("%w: K=%d for %d nodes", ErrCacheCorrupt, f.K, n)
	}
	// Read in chunks so a lying node count cannot make us allocate first.
	var chunk [4096]byte
	for done := int64(0); done < n; {
		m := min(int64(len(chunk)/4), n-done)
		if _, err := io.ReadFull(tr, chunk[:4*m]); err != nil {
			return nil, fmt.Errorf("%w: parts of node %d..: %v (header says %d nodes)", ErrCacheCorrupt, done, err, n)
		}
		for i := int64(0); i < m; i++ {
			q := le.Uint32(chunk[4*i:])
			if q >= uint32(f.K) {
				return nil, fmt.Errorf("%w: node %d in part %d, K=%d", ErrCacheCorrupt, done+i, q, f.K)
			}
			f.Parts = append(f.Parts, int32(q))
		}
		done += m
	}
	sum := crc.Sum32()
	var tail [4]byte
	if _, err := io.ReadFull(br, tail[:]); err != nil {
		return nil, fmt.Errorf("%w: checksum: %v", ErrCacheCorrupt, err)
	}
	if got := le.Uint32(tail[:]); got != sum {
		return nil, fmt.Errorf("%w: checksum %08x, content hashes to %08x", ErrCacheCorrupt, got, sum)
	}
	if _, err := br.ReadByte(); err != io.EOF {
		return nil, fmt.Errorf("%w: bytes after the checksum", ErrCacheCorrupt)
	}
	return f, nil
}

// SavePartition writes p to path atomically: through a temporary file in
// the same folder, removed on any error, renamed over path once complete.
// The file gets mode 0644 like the CLI's other outputs (a temporary file
// starts private).
func SavePartition(path string, g *Graph, p *Partitioning, opt PartitionOptions) (err error) {
	tmp, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if err := WritePartitionFile(tmp, g, p, opt); err != nil {
		return fmt.Errorf("%s: %w", path, err)
	}
	if err := tmp.Sync(); err != nil {
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	if err := os.Chmod(tmp.Name(), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), path)
}

// OpenPartition reads the partition file at path (qgtc partition --out, or
// a cache entry) for g, whatever K, seed and imbalance it was made with: it
// must be sound (ErrCacheCorrupt) and made for g (ErrCacheMismatch, naming
// both graphs' fingerprints). Errors name path.
func OpenPartition(path string, g *Graph) (*PartitionFile, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	f, err := ReadPartitionFile(fh)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if fp := GraphFingerprint(g); f.Graph != fp {
		return nil, fmt.Errorf("%s: %w: made for a graph of %v, this graph has %v", path, ErrCacheMismatch, f.Graph, fp)
	}
	return f, nil
}

// LoadPartition reads the partition file at path and checks it was made for
// g with k parts and opt's seed and imbalance (a cache entry: any
// difference is ErrCacheMismatch, naming every field that differs).
func LoadPartition(path string, g *Graph, k int, opt PartitionOptions) (*Partitioning, error) {
	fh, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	f, err := ReadPartitionFile(fh)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	if err := f.Match(g, k, opt); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return f.Partitioning(), nil
}

func effectiveImbalance(opt PartitionOptions) float64 {
	if opt.Imbalance == 0 {
		return DefaultImbalance
	}
	return opt.Imbalance
}
