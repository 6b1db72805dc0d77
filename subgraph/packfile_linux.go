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

// syncFileRangeWrite is SYNC_FILE_RANGE_WRITE (linux/fs.h), which package
// syscall does not name: start writing the range back, do not wait.
const syncFileRangeWrite = 2

// startWriteback starts writing [off, off+n) of w's file to disk without
// waiting, when w is a file: a large packed file's dirty pages otherwise
// wait for the final fsync, which then takes as long as the disk needs for
// all of them, after the cores are done.
func startWriteback(w any, off, n int64) {
	if f, ok := w.(interface{ Fd() uintptr }); ok {
		_ = syscall.SyncFileRange(int(f.Fd()), off, n, syncFileRangeWrite) // advice only
	}
}
