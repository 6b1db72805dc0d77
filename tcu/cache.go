package tcu

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// cache keeps compiled kernels on disk. An entry's name is the hash of
// everything that determines the cubin (source, headers, options, target
// architecture, NVRTC version); its content carries a checksum, so a
// truncated or corrupt file is detected, removed and rebuilt, never loaded.
type cache struct {
	dir string // "" disables the cache
}

// cacheMagic starts every entry; bump it when the format changes.
var cacheMagic = [8]byte{'Q', 'G', 'T', 'C', 'K', 'C', '0', '1'}

const cacheHeader = 8 + 8 + sha256.Size

// defaultCacheDir is $QGTC_CACHE_DIR, else <user cache dir>/qgtc/kernels;
// "off" disables caching.
func defaultCacheDir() string {
	if d := os.Getenv("QGTC_CACHE_DIR"); d != "" {
		if d == "off" {
			return ""
		}
		return d
	}
	base, err := os.UserCacheDir()
	if err != nil {
		return filepath.Join(os.TempDir(), "qgtc-kernels")
	}
	return filepath.Join(base, "qgtc", "kernels")
}

// cacheKey hashes the inputs of one compilation. Each part is length-prefixed
// so that moving bytes between parts changes the key.
func cacheKey(src string, headers []header, arch, nvrtcVersion string, opts []string) string {
	h := sha256.New()
	put := func(s string) {
		var n [8]byte
		binary.LittleEndian.PutUint64(n[:], uint64(len(s)))
		h.Write(n[:])
		h.Write([]byte(s))
	}
	put("src")
	put(src)
	for _, hd := range headers {
		put(hd.name)
		put(hd.src)
	}
	put("arch")
	put(arch)
	put("nvrtc")
	put(nvrtcVersion)
	for _, o := range opts {
		put(o)
	}
	return hex.EncodeToString(h.Sum(nil))
}

func (c *cache) path(key string) string { return filepath.Join(c.dir, key+".cubin") }

// get returns the entry for key, or ok=false when there is none or it is
// corrupt (a corrupt entry is removed so it gets rebuilt).
func (c *cache) get(key string) (data []byte, ok bool, err error) {
	if c.dir == "" {
		return nil, false, nil
	}
	raw, err := os.ReadFile(c.path(key))
	if errors.Is(err, fs.ErrNotExist) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("%w: read %s: %v", ErrCache, c.path(key), err)
	}
	payload, verr := decodeEntry(raw)
	if verr != nil {
		_ = os.Remove(c.path(key))
		return nil, false, nil
	}
	return payload, true, nil
}

// decodeEntry checks an entry's magic, length and checksum.
func decodeEntry(raw []byte) ([]byte, error) {
	if len(raw) < cacheHeader || !bytes.Equal(raw[:8], cacheMagic[:]) {
		return nil, fmt.Errorf("%w: bad header", ErrCache)
	}
	n := binary.LittleEndian.Uint64(raw[8:16])
	if n != uint64(len(raw)-cacheHeader) {
		return nil, fmt.Errorf("%w: length %d, file holds %d", ErrCache, n, len(raw)-cacheHeader)
	}
	payload := raw[cacheHeader:]
	sum := sha256.Sum256(payload)
	if !bytes.Equal(sum[:], raw[16:cacheHeader]) {
		return nil, fmt.Errorf("%w: checksum mismatch", ErrCache)
	}
	return payload, nil
}

func encodeEntry(payload []byte) []byte {
	out := make([]byte, cacheHeader+len(payload))
	copy(out, cacheMagic[:])
	binary.LittleEndian.PutUint64(out[8:16], uint64(len(payload)))
	sum := sha256.Sum256(payload)
	copy(out[16:cacheHeader], sum[:])
	copy(out[cacheHeader:], payload)
	return out
}

// put stores an entry atomically (temporary file, then rename), so a
// concurrent reader never sees half an entry.
func (c *cache) put(key string, payload []byte) error {
	if c.dir == "" {
		return nil
	}
	if err := os.MkdirAll(c.dir, 0o755); err != nil {
		return fmt.Errorf("%w: %v", ErrCache, err)
	}
	f, err := os.CreateTemp(c.dir, key+".tmp*")
	if err != nil {
		return fmt.Errorf("%w: %v", ErrCache, err)
	}
	_, werr := f.Write(encodeEntry(payload))
	cerr := f.Close()
	if werr != nil || cerr != nil {
		_ = os.Remove(f.Name())
		return fmt.Errorf("%w: write %s: %v", ErrCache, f.Name(), errors.Join(werr, cerr))
	}
	if err := os.Rename(f.Name(), c.path(key)); err != nil {
		_ = os.Remove(f.Name())
		return fmt.Errorf("%w: %v", ErrCache, err)
	}
	return nil
}

// getOrBuild returns the cached entry for key or builds, stores and returns
// it. A cache that cannot be written is not fatal: the build is returned.
// built reports whether build ran.
func (c *cache) getOrBuild(key string, build func() ([]byte, error)) (data []byte, built bool, err error) {
	if data, ok, err := c.get(key); err == nil && ok {
		return data, false, nil
	}
	data, err = build()
	if err != nil {
		return nil, true, err
	}
	_ = c.put(key, data)
	return data, true, nil
}
