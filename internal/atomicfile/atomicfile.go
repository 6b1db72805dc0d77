package atomicfile

import (
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/signal"
	"path/filepath"
	"sync"
	"syscall"
)

// File is an output file being written. Write to it, then Commit; Abort
// (safe to defer, a no-op after Commit) throws the bytes away.
type File struct {
	*os.File
	path string
	perm fs.FileMode
	done bool
}

var (
	mu      sync.Mutex
	live    = map[string]bool{} // temporary files to remove on a signal
	watched bool
)

// watch removes every live temporary file when the process is told to stop,
// then exits with the conventional 128+signal status.
func watch() {
	if watched {
		return
	}
	watched = true
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, syscall.SIGINT, syscall.SIGTERM)
	go func() {
		s := <-ch
		mu.Lock()
		for name := range live {
			os.Remove(name)
		}
		mu.Unlock()
		code := 1
		if sig, ok := s.(syscall.Signal); ok {
			code = 128 + int(sig)
		}
		os.Exit(code)
	}()
}

// Create starts writing path. perm is the mode the finished file gets
// (the temporary file is private until then).
func Create(path string, perm fs.FileMode) (*File, error) {
	f, err := os.CreateTemp(filepath.Dir(path), "."+filepath.Base(path)+".tmp*")
	if err != nil {
		return nil, err
	}
	mu.Lock()
	live[f.Name()] = true
	watch()
	mu.Unlock()
	return &File{File: f, path: path, perm: perm}, nil
}

// Commit syncs the file and renames it over the destination.
func (f *File) Commit() error {
	if f.done {
		return fmt.Errorf("atomicfile: %s: already finished", f.path)
	}
	err := f.File.Sync()
	if cerr := f.File.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(f.File.Name(), f.perm)
	}
	if err == nil {
		err = os.Rename(f.File.Name(), f.path)
	}
	if err != nil {
		f.Abort()
		return err
	}
	f.forget()
	return nil
}

// Abort removes the temporary file; the destination is untouched.
func (f *File) Abort() {
	if f.done {
		return
	}
	f.File.Close()
	os.Remove(f.File.Name())
	f.forget()
}

func (f *File) forget() {
	f.done = true
	mu.Lock()
	delete(live, f.File.Name())
	mu.Unlock()
}

// WriteFile is os.WriteFile through a temporary file.
func WriteFile(path string, data []byte, perm fs.FileMode) error {
	f, err := Create(path, perm)
	if err != nil {
		return err
	}
	if _, err := f.Write(data); err != nil {
		f.Abort()
		return err
	}
	return f.Commit()
}

// ErrNotWritable: the destination's folder is missing or refuses new files,
// or the destination is a folder.
var ErrNotWritable = errors.New("cannot write")

// Check reports whether path can be written by Create, without leaving
// anything behind: its folder exists and takes a new file, and path itself
// is not a folder.
func Check(path string) error {
	if fi, err := os.Stat(path); err == nil && fi.IsDir() {
		return fmt.Errorf("%w %s: it is a folder", ErrNotWritable, path)
	}
	dir := filepath.Dir(path)
	fi, err := os.Stat(dir)
	if err != nil {
		return fmt.Errorf("%w %s: folder %s does not exist", ErrNotWritable, path, dir)
	}
	if !fi.IsDir() {
		return fmt.Errorf("%w %s: %s is not a folder", ErrNotWritable, path, dir)
	}
	f, err := os.CreateTemp(dir, ".qgtc-check*")
	if err != nil {
		return fmt.Errorf("%w %s: %v", ErrNotWritable, path, errors.Unwrap(err))
	}
	f.Close()
	os.Remove(f.Name())
	return nil
}

// CheckDir is Check for an output folder that its writer creates when
// missing: it exists or can be created, and takes new files. The folders it
// makes to find out, it removes again: a run that fails before writing
// leaves nothing, and a folder named like a dataset does not stand in the
// dataset's way (qgtc sweep --dataset cora --out cora).
func CheckDir(dir string) error {
	if fi, err := os.Stat(dir); err == nil && !fi.IsDir() {
		return fmt.Errorf("%w %s: it is a file, not a folder", ErrNotWritable, dir)
	}
	var made []string // the missing folders, deepest first
	for d := filepath.Clean(dir); ; d = filepath.Dir(d) {
		if _, err := os.Lstat(d); err == nil || filepath.Dir(d) == d {
			break
		}
		made = append(made, d)
	}
	defer func() {
		for _, d := range made {
			os.Remove(d)
		}
	}()
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return fmt.Errorf("%w %s: %v", ErrNotWritable, dir, errors.Unwrap(err))
	}
	return Check(filepath.Join(dir, ".probe"))
}
