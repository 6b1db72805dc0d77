package subgraph

import (
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"os"
	"sync"
)

// ErrPackFile reports a malformed packed batch file.
var ErrPackFile = errors.New("subgraph: bad packed batch file")

// Packed batch file, version 1: every batch of a plan, in batch order, each
// a packed batch buffer (Pack) followed by its global node ids and its
// per-node feature scale, so that inference can run batch by batch from a
// memory map without the graph. Little-endian:
//
//	off  size  field
//	0    8     magic "QGPBFILE"
//	8    4     version (1)
//	12   4     flags: 1 = every stored feature code is 1, 2 = feature scales present
//	16   8     graph nodes N (the batches' nodes: each node is in one batch)
//	24   8     stored feature codes of the whole graph
//	32   4     batch count B
//	36   4     feature columns
//	40   4     feature bits (the codes' quantizer)
//	44   4     quantizer scale (float32)
//	48   4     quantizer lower bound (float32)
//	52   4     CRC-32C of bytes 0..128+32B with this field zero
//	56   16    data fingerprint (graph, features, labels, split)
//	72   16    partition fingerprint (the plan's batches)
//	88   16    feature scale mode, NUL padded
//	104  24    zero
//	128  32·B  table: offset u64, length u64, nodes u32, CRC-32C u32, zero u64
//
// Batch i occupies [offset, offset+length): its packed buffer (whose own
// header says its size P), then at alignUp(P) its n node ids (int32), then
// at alignUp of that its n scales (float32) when flag 2 is set. Offsets are
// multiples of PackFilePage, so a batch can be mapped on its own and its
// sections read in place.
const (
	PackFileVersion = 1
	PackFilePage    = 4096
	packFileHeader  = 128
	packFileEntry   = 32

	packFileAllOnes = 1
	packFileScales  = 2

	// MaxPackFileBatches bounds a file's table (32 MiB of entries).
	MaxPackFileBatches = 1 << 20
	// MaxPackFileNodes bounds a file's graph: node ids are int32.
	MaxPackFileNodes = math.MaxInt32
)

var packFileMagic = [8]byte{'Q', 'G', 'P', 'B', 'F', 'I', 'L', 'E'}

// writebackChunk is how much WritePackedBatches writes between asking the
// system to start writing it to disk (startWriteback).
const writebackChunk = 256 << 20

// PackFileInfo is what a packed batch file says of the whole plan.
type PackFileInfo struct {
	Nodes        int  // the graph's
	FeatureCodes int  // stored codes of the whole graph (the sparse first product's size)
	AllOnes      bool // every stored code is 1
	Scales       bool // each batch carries its nodes' feature scale
	Batches      int
	FeatCols     int
	// The feature codes' quantizer (quantize.Params: bits, scale, lower).
	QBits           int
	QScale, QLower  float32
	Data, Partition [16]byte // fingerprints
	ScaleMode       string   // how the feature scales were made (at most 16 bytes)
}

// PackFileBatch is one batch handed to WritePackedBatches, or read back.
type PackFileBatch struct {
	Packed []byte    // the packed buffer (Batch.Pack)
	Nodes  []int32   // global ids, one per packed row
	Scale  []float32 // per-node feature scale; nil unless Info.Scales
	// What Seal made: the batch's bytes in the file and their checksum.
	blob []byte
	crc  uint32
}

// Seal validates b against the file's info (ReadPacked, rows, features,
// node ids inside the graph) and lays out and checksums its bytes, as
// WritePackedBatches does for a batch not sealed: callers that build
// batches on several cores seal them there, so the one writer only writes.
func (b *PackFileBatch) Seal(info *PackFileInfo) error {
	p, err := ReadPacked(b.Packed)
	if err != nil {
		return err
	}
	if len(b.Nodes) != p.Nodes || (info.Scales != (b.Scale != nil)) || (b.Scale != nil && len(b.Scale) != p.Nodes) {
		return fmt.Errorf("%w: %d rows, %d node ids, %d scales (scales wanted: %v)", ErrPackFile, p.Nodes, len(b.Nodes), len(b.Scale), info.Scales)
	}
	if p.FeatCols != info.FeatCols || p.FeatBits != info.QBits {
		return fmt.Errorf("%w: features %d × %d bits, the file's are %d × %d", ErrPackFile, p.FeatCols, p.FeatBits, info.FeatCols, info.QBits)
	}
	for _, v := range b.Nodes {
		if v < 0 || int(v) >= info.Nodes {
			return fmt.Errorf("%w: node %d outside the graph's %d", ErrPackFile, v, info.Nodes)
		}
	}
	b.blob = batchBlob(*b)
	b.crc = crc32.Checksum(b.blob, castagnoli)
	return nil
}

// PackFileWriter is where WritePackedBatches writes: a file being written
// (internal/atomicfile's, so a failed write leaves nothing behind).
type PackFileWriter interface {
	io.Writer
	io.WriterAt
}

func alignPage(x int64) int64 { return (x + PackFilePage - 1) / PackFilePage * PackFilePage }

func (info *PackFileInfo) check() error {
	switch {
	case info.Nodes < 0 || info.Nodes > MaxPackFileNodes:
		return fmt.Errorf("%w: %d graph nodes (at most %d)", ErrPackFile, info.Nodes, MaxPackFileNodes)
	case info.Batches < 0 || info.Batches > MaxPackFileBatches:
		return fmt.Errorf("%w: %d batches (at most %d)", ErrPackFile, info.Batches, MaxPackFileBatches)
	case info.FeatureCodes < 0:
		return fmt.Errorf("%w: %d feature codes", ErrPackFile, info.FeatureCodes)
	case info.FeatCols < 0 || info.FeatCols > 1<<24:
		return fmt.Errorf("%w: %d feature columns", ErrPackFile, info.FeatCols)
	case info.QBits < 0 || info.QBits > 32:
		return fmt.Errorf("%w: %d feature bits", ErrPackFile, info.QBits)
	case len(info.ScaleMode) > 16:
		return fmt.Errorf("%w: feature scale mode %q longer than 16 bytes", ErrPackFile, info.ScaleMode)
	}
	return nil
}

// WritePackedBatches writes info.Batches batches, next(i) giving batch i,
// to w: the header and table are written last, at offset 0, once every
// batch's place and checksum are known, so only one batch is held at a time
// (and next may set what the header says of all of them, a fingerprint
// over their nodes). Each batch is validated (Seal) before it is written.
func WritePackedBatches(w PackFileWriter, info *PackFileInfo, next func(i int) (PackFileBatch, error)) error {
	if err := info.check(); err != nil {
		return err
	}
	nb := info.Batches
	table := make([]byte, packFileHeader+packFileEntry*nb)
	pos := int64(len(table))
	if _, err := w.Write(table); err != nil {
		return err
	}
	var zeros [PackFilePage]byte
	pad := func(to int64) error {
		for pos < to {
			k, err := w.Write(zeros[:min(int64(len(zeros)), to-pos)])
			pos += int64(k)
			if err != nil {
				return err
			}
		}
		return nil
	}
	le := binary.LittleEndian
	written, synced := int64(0), int64(0)
	for i := range nb {
		b, err := next(i)
		if err != nil {
			return err
		}
		if b.blob == nil {
			if err := b.Seal(info); err != nil {
				return fmt.Errorf("batch %d: %w", i, err)
			}
		}
		blob := b.blob
		written += int64(len(b.Nodes))
		if err := pad(alignPage(pos)); err != nil {
			return err
		}
		e := table[packFileHeader+packFileEntry*i:]
		le.PutUint64(e[0:], uint64(pos))
		le.PutUint64(e[8:], uint64(len(blob)))
		le.PutUint32(e[16:], uint32(len(b.Nodes)))
		le.PutUint32(e[20:], b.crc)
		k, err := w.Write(blob)
		pos += int64(k)
		if err != nil {
			return err
		}
		if pos-synced >= writebackChunk {
			startWriteback(w, synced, pos-synced)
			synced = pos
		}
	}
	if written != int64(info.Nodes) {
		return fmt.Errorf("%w: the batches hold %d nodes of the graph's %d (each node must be in one batch)", ErrPackFile, written, info.Nodes)
	}
	if err := pad(alignPage(pos)); err != nil {
		return err
	}
	if err := info.check(); err != nil || info.Batches != nb {
		return fmt.Errorf("%w: the header changed while the batches were written: %v", ErrPackFile, err)
	}
	putPackFileHeader(table, info)
	_, err := w.WriteAt(table, 0)
	return err
}

// blobLayout is where a batch's parts lie in its bytes, after a packed
// buffer of psize bytes: n node ids at ids, then (with scales) n scales at
// sc; end is the batch's length.
func blobLayout(psize, n int, scales bool) (ids, sc, end int) {
	ids = alignUp(psize)
	end = ids + 4*n
	if scales {
		sc = alignUp(end)
		end = sc + 4*n
	}
	return ids, sc, end
}

// batchBlob lays out one batch's bytes: packed buffer, node ids, scales.
func batchBlob(b PackFileBatch) []byte {
	ids, sc, size := blobLayout(len(b.Packed), len(b.Nodes), b.Scale != nil)
	blob := make([]byte, size)
	copy(blob, b.Packed)
	le := binary.LittleEndian
	for i, v := range b.Nodes {
		le.PutUint32(blob[ids+4*i:], uint32(v))
	}
	for i, s := range b.Scale {
		le.PutUint32(blob[sc+4*i:], math.Float32bits(s))
	}
	return blob
}

func putPackFileHeader(buf []byte, info *PackFileInfo) {
	le := binary.LittleEndian
	copy(buf, packFileMagic[:])
	le.PutUint32(buf[8:], PackFileVersion)
	flags := uint32(0)
	if info.AllOnes {
		flags |= packFileAllOnes
	}
	if info.Scales {
		flags |= packFileScales
	}
	le.PutUint32(buf[12:], flags)
	le.PutUint64(buf[16:], uint64(info.Nodes))
	le.PutUint64(buf[24:], uint64(info.FeatureCodes))
	le.PutUint32(buf[32:], uint32(info.Batches))
	le.PutUint32(buf[36:], uint32(info.FeatCols))
	le.PutUint32(buf[40:], uint32(info.QBits))
	le.PutUint32(buf[44:], math.Float32bits(info.QScale))
	le.PutUint32(buf[48:], math.Float32bits(info.QLower))
	copy(buf[56:72], info.Data[:])
	copy(buf[72:88], info.Partition[:])
	copy(buf[88:104], info.ScaleMode)
	le.PutUint32(buf[52:], 0)
	le.PutUint32(buf[52:], crc32.Checksum(buf, castagnoli))
}

// PackedFile is an open packed batch file: its header and table, checked
// against the file's size, and the batches, each read (from a memory map
// where the system has one) and checksummed on first use.
type PackedFile struct {
	Info    PackFileInfo
	path    string
	size    int64
	entries []packFileEntryT
	src     packSource
	mu      sync.Mutex
	checked []bool
}

type packFileEntryT struct {
	off, length int64
	nodes       int
	crc         uint32
}

// packSource gives a batch's bytes: a view of a memory map, or a copy read
// from the file where there is no mmap.
type packSource interface {
	bytes(off, length int64) ([]byte, error)
	release(off, length int64)
	close() error
}

// OpenPackedBatches opens the packed batch file at path and validates its
// header and table (sizes, offsets and checksum) before trusting them.
func OpenPackedBatches(path string) (*PackedFile, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	pf, err := openPacked(f, path)
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	return pf, nil
}

func openPacked(f *os.File, path string) (*PackedFile, error) {
	st, err := f.Stat()
	if err != nil {
		return nil, err
	}
	size := st.Size()
	if size < packFileHeader {
		return nil, fmt.Errorf("%w: %d bytes, shorter than the %d-byte header", ErrPackFile, size, packFileHeader)
	}
	hdr := make([]byte, packFileHeader)
	if _, err := f.ReadAt(hdr, 0); err != nil {
		return nil, err
	}
	if [8]byte(hdr[:8]) != packFileMagic {
		return nil, fmt.Errorf("%w: magic %q, want %q", ErrPackFile, hdr[:8], packFileMagic[:])
	}
	le := binary.LittleEndian
	if v := le.Uint32(hdr[8:]); v != PackFileVersion {
		return nil, fmt.Errorf("%w: version %d, this reader knows %d", ErrPackFile, v, PackFileVersion)
	}
	flags := le.Uint32(hdr[12:])
	if flags&^(packFileAllOnes|packFileScales) != 0 {
		return nil, fmt.Errorf("%w: unknown flags %#x", ErrPackFile, flags)
	}
	nodes, codes, nb := le.Uint64(hdr[16:]), le.Uint64(hdr[24:]), le.Uint32(hdr[32:])
	if nodes > MaxPackFileNodes || codes > 1<<62 || nb > MaxPackFileBatches {
		return nil, fmt.Errorf("%w: counts nodes=%d codes=%d batches=%d out of range", ErrPackFile, nodes, codes, nb)
	}
	tableEnd := int64(packFileHeader) + packFileEntry*int64(nb)
	if tableEnd > size {
		return nil, fmt.Errorf("%w: a table of %d batches needs %d bytes, the file has %d", ErrPackFile, nb, tableEnd, size)
	}
	buf := make([]byte, tableEnd)
	copy(buf, hdr)
	if _, err := f.ReadAt(buf[packFileHeader:], packFileHeader); err != nil {
		return nil, err
	}
	want := le.Uint32(buf[52:])
	le.PutUint32(buf[52:], 0)
	if got := crc32.Checksum(buf, castagnoli); got != want {
		return nil, fmt.Errorf("%w: header and table checksum %08x, recorded %08x", ErrPackFile, got, want)
	}
	mode := string(buf[88:104])
	for i := range len(mode) {
		if mode[i] == 0 {
			mode = mode[:i]
			break
		}
	}
	pf := &PackedFile{path: path, size: size, Info: PackFileInfo{
		Nodes: int(nodes), FeatureCodes: int(codes), AllOnes: flags&packFileAllOnes != 0, Scales: flags&packFileScales != 0,
		Batches: int(nb), FeatCols: int(le.Uint32(buf[36:])), QBits: int(le.Uint32(buf[40:])),
		QScale: math.Float32frombits(le.Uint32(buf[44:])), QLower: math.Float32frombits(le.Uint32(buf[48:])),
		Data: [16]byte(buf[56:72]), Partition: [16]byte(buf[72:88]), ScaleMode: mode,
	}}
	if err := pf.Info.check(); err != nil {
		return nil, err
	}
	prev := tableEnd
	total := int64(0)
	pf.entries = make([]packFileEntryT, nb)
	for i := range pf.entries {
		e := buf[packFileHeader+packFileEntry*i:]
		off, length, n := le.Uint64(e[0:]), le.Uint64(e[8:]), le.Uint32(e[16:])
		if off%PackFilePage != 0 || off < uint64(prev) || off > uint64(size) || length > uint64(size)-off {
			return nil, fmt.Errorf("%w: batch %d at %d (%d bytes) does not fit after %d in %d bytes", ErrPackFile, i, off, length, prev, size)
		}
		if n > MaxPackNodes || length < packHeader+4*uint64(n) {
			return nil, fmt.Errorf("%w: batch %d: %d nodes in %d bytes", ErrPackFile, i, n, length)
		}
		pf.entries[i] = packFileEntryT{off: int64(off), length: int64(length), nodes: int(n), crc: le.Uint32(e[20:])}
		prev = int64(off + length)
		total += int64(n)
	}
	// Every node is in one batch: so the graph's size, which a reader
	// allocates by, is bounded by the file's (4 bytes of node id each).
	if total != int64(nodes) {
		return nil, fmt.Errorf("%w: the batches hold %d nodes, the header says the graph has %d", ErrPackFile, total, nodes)
	}
	if pf.src, err = newPackSource(f, size); err != nil {
		return nil, err
	}
	pf.checked = make([]bool, nb)
	return pf, nil
}

// Len is the number of batches.
func (pf *PackedFile) Len() int { return len(pf.entries) }

// Batch returns batch i: its packed buffer validated (ReadPacked), node ids
// (each inside the graph) and scales. Its bytes are checksummed, and its
// indices and node ids checked, on the first call for i; the packed view,
// and on a little-endian host the node ids and scales, read the mapped
// file in place: they must not be written, and are invalid after Close.
func (pf *PackedFile) Batch(i int) (*Packed, PackFileBatch, error) {
	if i < 0 || i >= len(pf.entries) {
		return nil, PackFileBatch{}, fmt.Errorf("%w: batch %d of %d", ErrPackFile, i, len(pf.entries))
	}
	e := pf.entries[i]
	blob, err := pf.src.bytes(e.off, e.length)
	if err != nil {
		return nil, PackFileBatch{}, fmt.Errorf("%s: batch %d: %w", pf.path, i, err)
	}
	fail := func(format string, a ...any) (*Packed, PackFileBatch, error) {
		return nil, PackFileBatch{}, fmt.Errorf("%s: batch %d: %w: %s", pf.path, i, ErrPackFile, fmt.Sprintf(format, a...))
	}
	pf.mu.Lock()
	checked := pf.checked[i]
	pf.mu.Unlock()
	if !checked {
		if got := crc32.Checksum(blob, castagnoli); got != e.crc {
			return fail("checksum %08x, recorded %08x", got, e.crc)
		}
	}
	psize := binary.LittleEndian.Uint64(blob[56:])
	n := e.nodes
	at, sc, end := blobLayout(int(min(psize, uint64(len(blob)))), n, pf.Info.Scales)
	if psize > uint64(len(blob)) || end != len(blob) {
		return fail("packed buffer of %d bytes and %d nodes do not make the %d recorded", psize, n, len(blob))
	}
	// The indices are checked with the checksum, once: every later pass
	// would read them all again to find what the first pass found
	// (bench/scale/RESULTS.md).
	p, err := readPacked(blob[:psize], !checked)
	if err != nil {
		return nil, PackFileBatch{}, fmt.Errorf("%s: batch %d: %w", pf.path, i, err)
	}
	if p.Nodes != n || p.FeatCols != pf.Info.FeatCols || p.FeatBits != pf.Info.QBits {
		return fail("%d nodes, features %d × %d bits; the table says %d nodes, the header %d × %d", p.Nodes, p.FeatCols, p.FeatBits, n, pf.Info.FeatCols, pf.Info.QBits)
	}
	// Node ids and scales are read in place where the host allows (views
	// of the map, or of the batch's own read buffer), else decoded.
	ids := blob[at : at+4*n]
	out := PackFileBatch{Packed: blob[:psize], Nodes: int32View(ids)}
	if out.Nodes == nil {
		out.Nodes = make([]int32, n)
		for j := range out.Nodes {
			out.Nodes[j] = int32(binary.LittleEndian.Uint32(ids[4*j:]))
		}
	}
	if !checked { // the ids are checksummed with the rest: once, as the indices
		for _, v := range out.Nodes {
			if uint32(v) >= uint32(pf.Info.Nodes) {
				return fail("node id %d outside the graph's %d", uint32(v), pf.Info.Nodes)
			}
		}
		pf.mu.Lock()
		pf.checked[i] = true
		pf.mu.Unlock()
	}
	if pf.Info.Scales {
		sb := blob[sc : sc+4*n]
		if out.Scale = float32View(sb); out.Scale == nil {
			out.Scale = make([]float32, n)
			for j := range out.Scale {
				out.Scale[j] = math.Float32frombits(binary.LittleEndian.Uint32(sb[4*j:]))
			}
		}
	}
	return p, out, nil
}

// Release tells the system that batch i's pages will not be read soon (a
// pass in batch order is then resident one batch at a time).
func (pf *PackedFile) Release(i int) {
	if i >= 0 && i < len(pf.entries) {
		pf.src.release(pf.entries[i].off, pf.entries[i].length)
	}
}

// Close unmaps and closes the file; views from Batch are invalid after it.
func (pf *PackedFile) Close() error { return pf.src.close() }

// readSource reads each batch with ReadAt: the fallback where there is no mmap.
type readSource struct{ f *os.File }

func (r readSource) bytes(off, length int64) ([]byte, error) {
	buf := alignedBytes(int(length))
	if _, err := r.f.ReadAt(buf, off); err != nil {
		return nil, err
	}
	return buf, nil
}

func (readSource) release(int64, int64) {}
func (r readSource) close() error       { return r.f.Close() }
