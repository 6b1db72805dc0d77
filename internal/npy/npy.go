// Package npy writes NumPy's .npy format 1.0 for the arrays qgtc hands to
// Python (benchmark exports, prediction files): little-endian int32 or
// float32, C order.
package npy

import (
	"encoding/binary"
	"fmt"
	"io"
	"os"
	"strings"
)

// Header is the header of an array of descr ("<i4" or "<f4") and shape
// dims, padded so the data starts on a 64-byte boundary.
func Header(descr string, dims ...int) []byte {
	shape := make([]string, len(dims))
	for i, d := range dims {
		shape[i] = fmt.Sprint(d)
	}
	s := strings.Join(shape, ", ")
	if len(dims) == 1 {
		s += ","
	}
	dict := fmt.Sprintf("{'descr': '%s', 'fortran_order': False, 'shape': (%s), }", descr, s)
	pad := (64 - (10+len(dict)+1)%64) % 64
	h := []byte("\x93NUMPY\x01\x00")
	h = binary.LittleEndian.AppendUint16(h, uint16(len(dict)+pad+1))
	h = append(h, dict...)
	h = append(h, strings.Repeat(" ", pad)...)
	return append(h, '\n')
}

// Write writes data, an []int32 or a []float32 of shape dims, to w.
func Write(w io.Writer, data any, dims ...int) error {
	n := 1
	for _, d := range dims {
		n *= d
	}
	var descr string
	var got int
	switch v := data.(type) {
	case []int32:
		descr, got = "<i4", len(v)
	case []float32:
		descr, got = "<f4", len(v)
	default:
		return fmt.Errorf("npy: %T is not []int32 or []float32", data)
	}
	if got != n {
		return fmt.Errorf("npy: %d values for shape %v", got, dims)
	}
	if _, err := w.Write(Header(descr, dims...)); err != nil {
		return err
	}
	return binary.Write(w, binary.LittleEndian, data)
}

// WriteFile writes data of shape dims to path.
func WriteFile(path string, data any, dims ...int) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := Write(f, data, dims...); err != nil {
		f.Close()
		return fmt.Errorf("%s: %w", path, err)
	}
	return f.Close()
}
