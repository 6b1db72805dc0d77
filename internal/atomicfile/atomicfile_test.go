package atomicfile

import (
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func entries(t *testing.T, dir string) []string {
	t.Helper()
	es, err := os.ReadDir(dir)
	require.NoError(t, err)
	var names []string
	for _, e := range es {
		names = append(names, e.Name())
	}
	return names
}

func TestCommit(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.txt")
	require.NoError(t, os.WriteFile(path, []byte("old"), 0o644))
	f, err := Create(path, 0o644)
	require.NoError(t, err)
	_, err = f.WriteString("new contents")
	require.NoError(t, err)
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, "old", string(b), "the destination changes only on Commit")
	require.NoError(t, f.Commit())
	f.Abort() // no-op after Commit
	b, err = os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, "new contents", string(b))
	fi, err := os.Stat(path)
	require.NoError(t, err)
	assert.Equal(t, os.FileMode(0o644), fi.Mode().Perm())
	assert.Equal(t, []string{"out.txt"}, entries(t, dir))
	assert.Error(t, f.Commit(), "a second Commit is refused")
}

func TestAbort(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "out.bin")
	f, err := Create(path, 0o644)
	require.NoError(t, err)
	_, err = f.Write(make([]byte, 1000))
	require.NoError(t, err)
	f.Abort()
	assert.Empty(t, entries(t, dir), "nothing is left behind")
}

func TestWriteFile(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "a.json")
	require.NoError(t, WriteFile(path, []byte("{}\n"), 0o600))
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	assert.Equal(t, "{}\n", string(b))
	assert.Error(t, WriteFile(filepath.Join(dir, "missing", "a.json"), nil, 0o644))
}

func TestCheck(t *testing.T) {
	dir := t.TempDir()
	assert.NoError(t, Check(filepath.Join(dir, "new.txt")))
	assert.ErrorIs(t, Check(filepath.Join(dir, "missing", "new.txt")), ErrNotWritable)
	assert.ErrorIs(t, Check(dir), ErrNotWritable, "a folder is not a file")
	file := filepath.Join(dir, "plain")
	require.NoError(t, os.WriteFile(file, nil, 0o644))
	assert.ErrorIs(t, Check(filepath.Join(file, "x")), ErrNotWritable)
	assert.ErrorIs(t, CheckDir(file), ErrNotWritable)
	assert.NoError(t, CheckDir(filepath.Join(dir, "made", "here")))
	assert.Equal(t, []string{"plain"}, entries(t, dir), "CheckDir leaves no probe file and no folder it made")
	require.NoError(t, os.Mkdir(filepath.Join(dir, "kept"), 0o755))
	assert.NoError(t, CheckDir(filepath.Join(dir, "kept", "sub")))
	assert.Equal(t, []string{"kept", "plain"}, entries(t, dir), "a folder that was there stays")
	assert.Empty(t, entries(t, filepath.Join(dir, "kept")))
}

// TestSignalRemovesTemp runs a child that starts a file and is then
// interrupted: the temporary file goes, the destination never appears.
func TestSignalRemovesTemp(t *testing.T) {
	if path := os.Getenv("ATOMICFILE_CHILD"); path != "" {
		f, err := Create(path, 0o644)
		if err != nil {
			os.Exit(3)
		}
		f.WriteString("partial")
		os.Stdout.WriteString("ready\n")
		time.Sleep(time.Minute)
		os.Exit(4)
	}
	dir := t.TempDir()
	cmd := exec.Command(os.Args[0], "-test.run", "^TestSignalRemovesTemp$")
	cmd.Env = append(os.Environ(), "ATOMICFILE_CHILD="+filepath.Join(dir, "out.txt"))
	out, err := cmd.StdoutPipe()
	require.NoError(t, err)
	require.NoError(t, cmd.Start())
	buf := make([]byte, 6)
	_, err = out.Read(buf)
	require.NoError(t, err)
	require.Equal(t, "ready\n", string(buf))
	require.Len(t, entries(t, dir), 1, "the temporary file exists while writing")
	require.NoError(t, cmd.Process.Signal(syscall.SIGINT))
	err = cmd.Wait()
	var ee *exec.ExitError
	require.ErrorAs(t, err, &ee)
	assert.Equal(t, 130, ee.ExitCode())
	assert.Empty(t, entries(t, dir))
}
