package subgraph

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/qgtc/qgtc/datasets"
)

// Bundled describes one dataset shipped in testdata/.
type Bundled struct {
	Name        string
	Description string
}

// BundledDatasets lists the datasets shipped in testdata/ (see
// testdata/README.md for sources, licenses and verified counts).
var BundledDatasets = []Bundled{
	{"cora", "Cora citation graph, Planetoid public split (140/500/1000); cora/cora.npz is the raw gnn-benchmark copy"},
	{"citeseer", "CiteSeer citation graph, Planetoid public split (120/500/1000), 15 featureless test-range nodes"},
	{"pubmed_partial", "PubMed citation graph and labels, Planetoid split; features only for the 60 train + 1000 test nodes"},
	{"amazon_computers", "Amazon Computers co-purchase graph (gnn-benchmark), no split shipped (a random one: 20 train and 30 val nodes per class)"},
	{"amazon_photo", "Amazon Photo co-purchase graph (gnn-benchmark), no split shipped (a random one: 20 train and 30 val nodes per class)"},
	{"coauthor_cs", "Coauthor CS co-authorship graph (gnn-benchmark), no split shipped (a random one: 20 train and 30 val nodes per class)"},
	{"coauthor_physics", "Coauthor Physics co-authorship graph (gnn-benchmark), no split shipped (a random one: 20 train and 30 val nodes per class)"},
	{"ppi_node2vec", "Human PPI (node2vec's BioGRID subgraph), 50 multi-labels, no features"},
	{"blogcatalog", "BlogCatalog3 social graph (10,312 nodes), 39 multi-labels, no features"},
	{"proteins", "TU PROTEINS graph classification: 1,113 graphs, 3 node tags, 2 classes, DGCNN's 10 folds"},
}

// EmbeddedPrefix starts what Locate returns for a copy built into the
// binary (package datasets): "embedded:cora". Load accepts such names.
const EmbeddedPrefix = "embedded:"

// Locate resolves a dataset name to a folder, or returns nameOrPath when
// it is an existing file or folder. A name (or a relative path such as
// "cora/cora.npz" that does not exist as given) is looked up, in order, in
// $QGTC_DATA/<name>, ./testdata/<name>, <executable's dir>/../testdata/<name>
// and <module root>/testdata/<name> (the module root is the nearest folder
// above the working directory holding qgtc's go.mod, so tests find the
// bundled copies from any package), then among the copies built into the
// binary, returned as EmbeddedPrefix+name: a `go install`ed qgtc finds
// cora from any folder.
func Locate(nameOrPath string) (string, error) {
	if _, err := os.Stat(nameOrPath); err == nil {
		return nameOrPath, nil
	}
	if rel, ok := strings.CutPrefix(nameOrPath, EmbeddedPrefix); ok {
		if _, err := embeddedStat(rel); err != nil {
			return "", fmt.Errorf("%w: %q: this qgtc carries no such dataset (it carries %s)", ErrNotFound, nameOrPath, strings.Join(datasets.Names(), ", "))
		}
		return nameOrPath, nil
	}
	if nameOrPath == "" || filepath.IsAbs(nameOrPath) || strings.HasPrefix(nameOrPath, ".") {
		return "", fmt.Errorf("%w: %q: no such file or folder", ErrNotFound, nameOrPath)
	}
	var looked []string
	for _, dir := range searchDirs() {
		p := filepath.Join(dir, nameOrPath)
		looked = append(looked, p)
		if _, err := os.Stat(p); err == nil {
			return p, nil
		}
	}
	if _, err := embeddedStat(nameOrPath); err == nil {
		return EmbeddedPrefix + filepath.ToSlash(filepath.Clean(nameOrPath)), nil
	}
	looked = append(looked, "the copies built into qgtc ("+strings.Join(datasets.Names(), ", ")+")")
	return "", &notFoundError{fmt.Sprintf("dataset %q not found; looked in %s (set QGTC_DATA or pass a path)", nameOrPath, strings.Join(looked, ", "))}
}

// embeddedStat stats rel (a name or name/file, either separator) among
// the copies built into the binary.
func embeddedStat(rel string) (fs.FileInfo, error) {
	rel = filepath.ToSlash(filepath.Clean(rel))
	if !fs.ValidPath(rel) || rel == "." {
		return nil, fs.ErrNotExist
	}
	return fs.Stat(datasets.FS, rel)
}

// notFoundError reads as its message alone and matches ErrNotFound.
type notFoundError struct{ msg string }

func (e *notFoundError) Error() string { return e.msg }
func (e *notFoundError) Unwrap() error { return ErrNotFound }

func searchDirs() []string {
	var dirs []string
	if d := os.Getenv("QGTC_DATA"); d != "" {
		dirs = append(dirs, d)
	}
	dirs = append(dirs, "testdata")
	if exe, err := os.Executable(); err == nil {
		dirs = append(dirs, filepath.Join(filepath.Dir(exe), "..", "testdata"))
	}
	if root := moduleRoot(); root != "" {
		dirs = append(dirs, filepath.Join(root, "testdata"))
	}
	return slices.Compact(dirs)
}

// moduleRoot walks up from the working directory to qgtc's go.mod.
func moduleRoot() string {
	dir, err := os.Getwd()
	if err != nil {
		return ""
	}
	for {
		if b, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && strings.Contains(string(b), "module github.com/qgtc/qgtc\n") {
			return dir
		}
		up := filepath.Dir(dir)
		if up == dir {
			return ""
		}
		dir = up
	}
}

// Load loads a node-level dataset by bundled name ("cora") or by path to
// a file or folder, recognizing the format:
//
//   - a folder with ind.<name>.graph: Planetoid, public split;
//   - a folder with raw/edge.csv.gz: an OGB node-property dataset;
//   - a folder with <prefix>-G.json: GraphSAGE;
//   - a folder with a TU text file and 10fold_idx/: graph classification,
//     returned as the disjoint union (see GraphSet.Dataset; LoadGraphSet
//     keeps the per-graph view);
//   - a folder with exactly one .npz, .zip, .mat or edge-list file: that file;
//   - .npz (gnn-benchmark adj_*/attr_*/labels, or src_li/dst_li edges),
//     .zip holding one such .npz, .mat (node2vec/DeepWalk `network` and
//     `group`), or a text edge list (.txt, .edges, .el, .csv, .tsv).
//
// The graph is always made undirected, deduplicated and loop-free. Only
// Planetoid and OGB folders ship a split; call RandomSplit for the others.
func Load(nameOrPath string) (*Dataset, error) {
	p, err := Locate(nameOrPath)
	if err != nil {
		return nil, err
	}
	var d *Dataset
	if rel, ok := strings.CutPrefix(p, EmbeddedPrefix); ok {
		d, err = loadEmbedded(rel)
	} else {
		d, err = loadPath(p)
	}
	if err != nil {
		return nil, err
	}
	if d.Name == "" {
		d.Name = datasetName(p)
	}
	return d, nil
}

// LoadGraphSet loads a TU graph-classification dataset (name or path of
// the folder or of its text file).
func LoadGraphSet(nameOrPath string) (*GraphSet, error) {
	p, err := Locate(nameOrPath)
	if err != nil {
		return nil, err
	}
	if strings.HasPrefix(p, EmbeddedPrefix) {
		return nil, fmt.Errorf("%w: %s: not a TU graph-classification dataset", ErrFormat, p)
	}
	if st, err := os.Stat(p); err == nil && st.IsDir() {
		f, err := tuFile(p)
		if err != nil {
			return nil, err
		}
		if f == "" {
			return nil, fmt.Errorf("%w: %s: no TU text file (<NAME>.txt) in the folder", ErrFormat, p)
		}
		p = f
	}
	return readTU(p)
}

// tuFile finds <NAME>.txt next to a 10fold_idx folder, or a lone
// <NAME>.txt whose first line is a graph count.
func tuFile(dir string) (string, error) {
	txts, _ := filepath.Glob(filepath.Join(dir, "*.txt"))
	if len(txts) != 1 {
		return "", nil
	}
	if st, err := os.Stat(filepath.Join(dir, "10fold_idx")); err == nil && st.IsDir() {
		return txts[0], nil
	}
	return "", nil
}

func loadPath(p string) (*Dataset, error) {
	st, err := os.Stat(p)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotFound, err)
	}
	if !st.IsDir() {
		return loadFile(p)
	}
	if gs, _ := filepath.Glob(filepath.Join(p, "ind.*.graph")); len(gs) > 0 {
		if len(gs) > 1 {
			return nil, fmt.Errorf("%w: %s: %d Planetoid datasets in one folder; name the ind.<name>.graph file", ErrFormat, p, len(gs))
		}
		name := strings.TrimSuffix(strings.TrimPrefix(filepath.Base(gs[0]), "ind."), ".graph")
		d, err := readPlanetoid(osFiles{}, p, name)
		if err == nil && d.Name != filepath.Base(p) {
			d.Name = filepath.Base(filepath.Clean(p))
		}
		return d, err
	}
	if _, err := os.Stat(filepath.Join(p, "raw", "edge.csv.gz")); err == nil {
		return readOGB(osFiles{}, p)
	}
	if gs, _ := filepath.Glob(filepath.Join(p, "*-G.json")); len(gs) == 1 {
		return readGraphSAGE(osFiles{}, strings.TrimSuffix(gs[0], "-G.json"))
	}
	if f, err := tuFile(p); err != nil || f != "" {
		if err != nil {
			return nil, err
		}
		s, err := readTU(f)
		if err != nil {
			return nil, err
		}
		d := s.Dataset()
		d.Name = filepath.Base(filepath.Clean(p))
		return d, nil
	}
	ents, err := os.ReadDir(p)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", ErrNotFound, err)
	}
	var files []string
	for _, e := range ents {
		if !e.IsDir() && knownExt(e.Name()) {
			files = append(files, filepath.Join(p, e.Name()))
		}
	}
	if len(files) != 1 {
		return nil, fmt.Errorf("%w: %s: cannot tell the format: want ind.<name>.* (Planetoid), raw/edge.csv.gz (OGB), <prefix>-G.json (GraphSAGE), <NAME>.txt with 10fold_idx/ (TU), or one .npz/.zip/.mat/edge-list file (found %d)", ErrFormat, p, len(files))
	}
	d, err := loadFile(files[0])
	if err == nil {
		d.Name = filepath.Base(filepath.Clean(p))
	}
	return d, err
}

func knownExt(name string) bool {
	switch strings.ToLower(filepath.Ext(name)) {
	case ".npz", ".zip", ".mat", ".txt", ".edges", ".el", ".csv", ".tsv":
		return true
	}
	return false
}

func loadFile(p string) (*Dataset, error) {
	base := filepath.Base(p)
	if strings.HasPrefix(base, "ind.") && strings.HasSuffix(base, ".graph") {
		return loadPath(filepath.Dir(p))
	}
	if strings.HasSuffix(base, "-G.json") {
		return readGraphSAGE(osFiles{}, strings.TrimSuffix(p, "-G.json"))
	}
	if f, _ := tuFile(filepath.Dir(p)); f != "" && filepath.Clean(f) == filepath.Clean(p) {
		s, err := readTU(p)
		if err != nil {
			return nil, err
		}
		return s.Dataset(), nil
	}
	b, err := os.ReadFile(p)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return nil, fmt.Errorf("%w: %v", ErrNotFound, err)
		}
		return nil, fmt.Errorf("%w: %v", ErrFormat, err)
	}
	return decodeFile(p, b)
}

// decodeFile parses the bytes of a single-file dataset by p's extension.
func decodeFile(p string, b []byte) (*Dataset, error) {
	var d *Dataset
	var err error
	switch strings.ToLower(filepath.Ext(p)) {
	case ".npz", ".zip":
		d, err = readNPZ(p, b)
	case ".mat":
		d, err = readMAT(p, b)
	case ".txt", ".edges", ".el", ".csv", ".tsv":
		d, err = readEdgeList(p, b)
	default:
		return nil, fmt.Errorf("%w: %s: unknown file type %q (want .npz, .zip, .mat or an edge list)", ErrFormat, p, filepath.Ext(p))
	}
	if err != nil {
		return nil, err
	}
	d.Name = datasetName(p)
	return d, nil
}

// files is where the folder loaders (Planetoid, OGB, GraphSAGE) read
// from: the disk, or an in-memory map in fuzz tests (so fuzzing does no
// file I/O). Paths are the full paths built with filepath.Join.
type files interface {
	Open(path string) (io.ReadCloser, error)
	Glob(pattern string) ([]string, error)
}

type osFiles struct{}

// embeddedFiles reads the copies built into the binary; paths carry
// EmbeddedPrefix, so errors name them as "embedded:cora/ind.cora.x".
type embeddedFiles struct{}

func (embeddedFiles) Open(p string) (io.ReadCloser, error) {
	return datasets.FS.Open(strings.TrimPrefix(filepath.ToSlash(p), EmbeddedPrefix))
}

func (embeddedFiles) Glob(pattern string) ([]string, error) {
	m, err := fs.Glob(datasets.FS, strings.TrimPrefix(filepath.ToSlash(pattern), EmbeddedPrefix))
	for i := range m {
		m[i] = EmbeddedPrefix + m[i]
	}
	return m, err
}

// loadEmbedded loads rel ("cora" or "cora/cora.npz") from the copies
// built into the binary: a Planetoid folder or a single data file.
func loadEmbedded(rel string) (*Dataset, error) {
	rel = filepath.ToSlash(filepath.Clean(rel))
	p := EmbeddedPrefix + rel
	st, err := embeddedStat(rel)
	if err != nil {
		return nil, fmt.Errorf("%w: %s: %v", ErrNotFound, p, err)
	}
	if !st.IsDir() {
		b, err := fs.ReadFile(datasets.FS, rel)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %v", ErrFormat, p, err)
		}
		return decodeFile(p, b)
	}
	gs, _ := embeddedFiles{}.Glob(p + "/ind.*.graph")
	if len(gs) != 1 {
		return nil, fmt.Errorf("%w: %s: a built-in folder must hold one Planetoid dataset (found %d)", ErrFormat, p, len(gs))
	}
	name := strings.TrimSuffix(strings.TrimPrefix(path.Base(gs[0]), "ind."), ".graph")
	d, err := readPlanetoid(embeddedFiles{}, p, name)
	if err != nil {
		return nil, err
	}
	d.Name = path.Base(rel)
	return d, nil
}

func (osFiles) Open(p string) (io.ReadCloser, error)  { return os.Open(p) }
func (osFiles) Glob(pattern string) ([]string, error) { return filepath.Glob(pattern) }

func readFile(src files, p string) ([]byte, error) {
	rc, err := src.Open(p)
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	return io.ReadAll(rc)
}
