//go:build linux

package subgraph

import (
	"os"
	"syscall"
)

// mmapSource maps the whole file read-only: a batch is a slice of the map,
// read in place, and its pages are dropped again after use (Release).
type mmapSource struct {
	f    *os.File
	data []byte
}

func newPackSource(f *os.File, size int64) (packSource, error) {
	if size == 0 || int64(int(size)) != size {
		return readSource{f}, nil
	}
	data, err := syscall.Mmap(int(f.Fd()), 0, int(size), syscall.PROT_READ, syscall.MAP_SHARED)
	if err != nil { // a file system without mmap: read each batch instead
		return readSource{f}, nil
	}
	return &mmapSource{f: f, data: data}, nil
}

func (m *mmapSource) bytes(off, length int64) ([]byte, error) {
	return m.data[off : off+length : off+length], nil
}

func (m *mmapSource) release(off, length int64) {
	lo := off &^ (PackFilePage - 1)
	hi := min(int64(len(m.data)), alignPage(off+length))
	_ = syscall.Madvise(m.data[lo:hi], syscall.MADV_DONTNEED) // advice only: a failure costs memory, not results
}

func (m *mmapSource) close() error {
	err := syscall.Munmap(m.data)
	if cerr := m.f.Close(); err == nil {
		err = cerr
	}
	return err
}
