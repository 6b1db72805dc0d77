package tcu

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A library that does not load is named once in the error, even though
// dlerror's own message already starts with its path.
func TestOpenLibraryNamesEachCandidateOnce(t *testing.T) {
	missing := filepath.Join(t.TempDir(), "libcuda.so.1")
	for _, tc := range []struct {
		name       string
		candidates []string
	}{
		{"bare name", []string{"libqgtc-no-such-driver.so.1"}},
		{"path", []string{missing}},
		{"two", []string{"libqgtc-no-such-driver.so.1", missing}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := openLibrary(ErrNoDriver, tc.candidates, []string{"cuInit"})
			require.ErrorIs(t, err, ErrNoDriver)
			require.ErrorIs(t, err, ErrUnavailable)
			msg := err.Error()
			for _, c := range tc.candidates {
				assert.Equal(t, 1, strings.Count(msg, c), "%s named once in %q", c, msg)
			}
			assert.Equal(t, 1, strings.Count(msg, "no CUDA driver"), msg)
		})
	}
}

func TestDlopenWhy(t *testing.T) {
	assert.Equal(t, "libx.so: cannot open shared object file", dlopenWhy("libx.so", errString("libx.so: cannot open shared object file")))
	assert.Equal(t, "libx.so: image not found", dlopenWhy("libx.so", errString("image not found")))
}

type errString string

func (e errString) Error() string { return string(e) }
