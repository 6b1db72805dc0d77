//go:build ignore

// files.go writes the inputs of bench/trust's scripts (run from the
// repository root):
//
//	go run bench/trust/files.go crafted DIR
//	    the crafted-* files of subgraph's fuzz corpora, decoded, as
//	    DIR/<name>.npz|.mat|.txt, plus the full-size files built
//	    from Cora (2708 × 10^9 and 2708 × 396,000 features, a label of
//	    1,000,000) and compression bombs the size the issue measured
//	    (a 1.5 MB .npz and a 1 MB .mat that inflate to gigabytes)
//	go run bench/trust/files.go npzset SRC DST MEMBER INDEX VALUE
//	    copies the .npz SRC to DST with element INDEX of MEMBER.npy set
//	    to VALUE (<f4, <i8 and |i1 arrays)
//	go run bench/trust/files.go relabel FILE
//	    maps every label l >= 0 of the .npz FILE to (l+1) mod 7, in place
//	go run bench/trust/files.go flip FILE
//	    flips the high bytes of the first 64 floats of the safetensors
//	    FILE's data, in place (what a bad disk does to a cached model)
package main

import (
	"archive/zip"
	"bytes"
	"compress/flate"
	"compress/zlib"
	"encoding/binary"
	"fmt"
	"hash/crc32"
	"io"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

func main() {
	if len(os.Args) < 2 {
		fail("usage: files.go crafted DIR | npzset SRC DST MEMBER INDEX VALUE | relabel FILE | flip FILE")
	}
	var err error
	switch a := os.Args[2:]; {
	case os.Args[1] == "crafted" && len(a) == 1:
		err = crafted(a[0])
	case os.Args[1] == "npzset" && len(a) == 5:
		err = npzSet(a[0], a[1], a[2], a[3], a[4])
	case os.Args[1] == "relabel" && len(a) == 1:
		err = relabel(a[0])
	case os.Args[1] == "flip" && len(a) == 1:
		err = flip(a[0])
	default:
		fail("usage: files.go crafted DIR | npzset SRC DST MEMBER INDEX VALUE | relabel FILE | flip FILE")
	}
	if err != nil {
		fail(err.Error())
	}
}

func fail(msg string) {
	fmt.Fprintln(os.Stderr, "files.go:", msg)
	os.Exit(1)
}

const coraNPZ = "datasets/cora/cora.npz"

func crafted(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	ext := map[string]string{"FuzzNPZ": ".npz", "FuzzMAT": ".mat", "FuzzEdgeList": ".txt"}
	for target, e := range ext {
		files, _ := filepath.Glob(filepath.Join("subgraph", "testdata", "fuzz", target, "crafted-*"))
		for _, f := range files {
			b, err := os.ReadFile(f)
			if err != nil {
				return err
			}
			s, ok := strings.CutPrefix(strings.TrimSpace(string(b)), "go test fuzz v1\n[]byte(")
			if !ok {
				return fmt.Errorf("%s: not a one-[]byte corpus file", f)
			}
			v, err := strconv.Unquote(strings.TrimSuffix(s, ")"))
			if err != nil {
				return fmt.Errorf("%s: %v", f, err)
			}
			if err := os.WriteFile(filepath.Join(dir, filepath.Base(f)+e), []byte(v), 0o644); err != nil {
				return err
			}
		}
	}
	for _, c := range []struct{ name, member, index, value string }{
		{"cora-attr-shape-1e9.npz", "attr_shape", "1", "1000000000"},
		{"cora-attr-cols-396k.npz", "attr_shape", "1", "396000"},
	} {
		if err := npzSet(coraNPZ, filepath.Join(dir, c.name), c.member, c.index, c.value); err != nil {
			return err
		}
	}
	// Cora's labels are int8: the label of 1,000,000 needs an int64 array.
	err := rewriteNPZ(coraNPZ, filepath.Join(dir, "cora-label-1e6.npz"), func(name string, b []byte) ([]byte, error) {
		if name != "labels.npy" {
			return b, nil
		}
		hdr, data, err := npyParts(b)
		if err != nil {
			return nil, err
		}
		out := make([]byte, 0, 8*len(data))
		for i, l := range data {
			v := int64(int8(l))
			if i == 5 {
				v = 1_000_000
			}
			out = binary.LittleEndian.AppendUint64(out, uint64(v))
		}
		return npy(strings.Replace(hdr, "'|i1'", "'<i8'", 1), out), nil
	})
	if err != nil {
		return err
	}
	for _, lying := range []bool{false, true} {
		b, err := npzBomb(1_500_000_000, lying)
		if err != nil {
			return err
		}
		name := map[bool]string{false: "bomb-1.5MB.npz", true: "bomb-lying-1.5MB.npz"}[lying]
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o644); err != nil {
			return err
		}
	}
	return os.WriteFile(filepath.Join(dir, "bomb-1MB.mat"), matBomb(1_000_000_000), 0o644)
}

// npzBomb is Cora's gnn-benchmark npz with its attr_data member replaced
// by n zero bytes (after a valid .npy header) deflated to about n/1000
// bytes; lying, its header declares 1,000 bytes instead of n.
func npzBomb(n int, lying bool) ([]byte, error) {
	hdr := npy("{'descr': '<f4', 'fortran_order': False, 'shape': ("+strconv.Itoa(n/4)+",), }", nil)
	var comp bytes.Buffer
	fw, _ := flate.NewWriter(&comp, flate.BestCompression)
	fw.Write(hdr)
	crc := crc32.NewIEEE()
	crc.Write(hdr)
	zero := make([]byte, 1<<20)
	for left := n; left > 0; left -= len(zero) {
		fw.Write(zero[:min(left, len(zero))])
		crc.Write(zero[:min(left, len(zero))])
	}
	fw.Close()
	declared := uint64(len(hdr) + n)
	if lying {
		declared = 1000
	}
	zr, err := zip.OpenReader(coraNPZ)
	if err != nil {
		return nil, err
	}
	defer zr.Close()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, f := range zr.File {
		if f.Name == "attr_data.npy" {
			w, err := zw.CreateRaw(&zip.FileHeader{Name: f.Name, Method: zip.Deflate, CompressedSize64: uint64(comp.Len()),
				UncompressedSize64: declared, CRC32: crc.Sum32()})
			if err != nil {
				return nil, err
			}
			w.Write(comp.Bytes())
			continue
		}
		if err := zw.Copy(f); err != nil {
			return nil, err
		}
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// matBomb is a MAT v5 file with one miCOMPRESSED element that inflates to
// n zero bytes.
func matBomb(n int) []byte {
	h := make([]byte, 128)
	copy(h, "MATLAB 5.0 MAT-file, bench/trust bomb")
	for i := 38; i < 116; i++ {
		h[i] = ' '
	}
	binary.LittleEndian.PutUint16(h[124:], 0x0100)
	copy(h[126:], "IM")
	var z bytes.Buffer
	zw, _ := zlib.NewWriterLevel(&z, zlib.BestCompression)
	zero := make([]byte, 1<<20)
	for left := n; left > 0; left -= len(zero) {
		zw.Write(zero[:min(left, len(zero))])
	}
	zw.Close()
	h = binary.LittleEndian.AppendUint32(h, 15) // miCOMPRESSED
	h = binary.LittleEndian.AppendUint32(h, uint32(z.Len()))
	return append(h, z.Bytes()...)
}

// npy is a version 1 .npy file: header dict hdr (padded) and data.
func npy(hdr string, data []byte) []byte {
	pad := 64 - (10+len(hdr)+1)%64
	hdr += strings.Repeat(" ", pad%64) + "\n"
	b := append([]byte("\x93NUMPY\x01\x00"), byte(len(hdr)), byte(len(hdr)>>8))
	return append(append(b, hdr...), data...)
}

// npyParts splits a version 1 .npy file into its header dict and data.
func npyParts(b []byte) (string, []byte, error) {
	if len(b) < 10 || string(b[:6]) != "\x93NUMPY" || b[6] != 1 {
		return "", nil, fmt.Errorf("not a version 1 .npy file")
	}
	end := 10 + int(binary.LittleEndian.Uint16(b[8:]))
	return strings.TrimSpace(string(b[10:end])), b[end:], nil
}

// rewriteNPZ copies the npz src to dst, passing each member through edit.
func rewriteNPZ(src, dst string, edit func(name string, b []byte) ([]byte, error)) error {
	zr, err := zip.OpenReader(src)
	if err != nil {
		return err
	}
	defer zr.Close()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, f := range zr.File {
		rc, err := f.Open()
		if err != nil {
			return err
		}
		b, err := io.ReadAll(rc)
		rc.Close()
		if err != nil {
			return err
		}
		if b, err = edit(f.Name, b); err != nil {
			return fmt.Errorf("%s: %s: %v", src, f.Name, err)
		}
		w, err := zw.CreateHeader(&zip.FileHeader{Name: f.Name, Method: f.Method})
		if err != nil {
			return err
		}
		w.Write(b)
	}
	if err := zw.Close(); err != nil {
		return err
	}
	return os.WriteFile(dst, buf.Bytes(), 0o644)
}

func npzSet(src, dst, member, index, value string) error {
	i, err := strconv.Atoi(index)
	if err != nil {
		return err
	}
	return rewriteNPZ(src, dst, func(name string, b []byte) ([]byte, error) {
		if name != member+".npy" {
			return b, nil
		}
		hdr, data, err := npyParts(b)
		if err != nil {
			return nil, err
		}
		data = append([]byte(nil), data...)
		switch {
		case strings.Contains(hdr, "'<f4'") && 4*i+4 <= len(data):
			v, err := strconv.ParseFloat(value, 32)
			if err != nil {
				return nil, err
			}
			binary.LittleEndian.PutUint32(data[4*i:], math.Float32bits(float32(v)))
		case strings.Contains(hdr, "'<i8'") && 8*i+8 <= len(data):
			v, err := strconv.ParseInt(value, 10, 64)
			if err != nil {
				return nil, err
			}
			binary.LittleEndian.PutUint64(data[8*i:], uint64(v))
		case strings.Contains(hdr, "'|i1'") && i < len(data):
			v, err := strconv.ParseInt(value, 10, 8)
			if err != nil {
				return nil, err
			}
			data[i] = byte(v)
		default:
			return nil, fmt.Errorf("index %d of %s: unsupported dtype or out of range", i, hdr)
		}
		return npy(hdr, data), nil
	})
}

func relabel(file string) error {
	return rewriteNPZ(file, file, func(name string, b []byte) ([]byte, error) {
		if name != "labels.npy" {
			return b, nil
		}
		hdr, data, err := npyParts(b)
		if err != nil {
			return nil, err
		}
		if !strings.Contains(hdr, "'|i1'") {
			return nil, fmt.Errorf("labels %s: want int8", hdr)
		}
		data = append([]byte(nil), data...)
		for i, l := range data {
			if int8(l) >= 0 {
				data[i] = byte((int8(l) + 1) % 7)
			}
		}
		return npy(hdr, data), nil
	})
}

func flip(file string) error {
	b, err := os.ReadFile(file)
	if err != nil {
		return err
	}
	if len(b) < 8 {
		return fmt.Errorf("%s: not a safetensors file", file)
	}
	data := 8 + int(binary.LittleEndian.Uint64(b))
	for i := data + 3; i < min(len(b), data+4*64); i += 4 {
		b[i] ^= 0x7f
	}
	return os.WriteFile(file, b, 0o644)
}
