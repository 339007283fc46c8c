package main

import (
	"bytes"
	"io"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// maxModuleFile is the largest file the root module may ship: every `go get`
// of redisync downloads each one.
const maxModuleFile = 1 << 20

// binaryKind names the executable format whose magic number head starts
// with, "" if none.
func binaryKind(head []byte) string {
	switch {
	case bytes.HasPrefix(head, []byte("\x7fELF")):
		return "ELF"
	case bytes.HasPrefix(head, []byte{0xfe, 0xed, 0xfa, 0xce}), bytes.HasPrefix(head, []byte{0xfe, 0xed, 0xfa, 0xcf}),
		bytes.HasPrefix(head, []byte{0xce, 0xfa, 0xed, 0xfe}), bytes.HasPrefix(head, []byte{0xcf, 0xfa, 0xed, 0xfe}),
		bytes.HasPrefix(head, []byte{0xca, 0xfe, 0xba, 0xbe}):
		return "Mach-O"
	case bytes.HasPrefix(head, []byte("MZ")):
		return "PE"
	}
	return ""
}

// moduleFiles lists what the root module's zip holds when it is fetched
// from the repository: the tracked files, less those of nested modules
// (directories with a go.mod of their own, such as bench/ and redisyncotel/),
// which ship separately.
func moduleFiles(t *testing.T) (root string, files []string) {
	t.Helper()
	if _, err := exec.LookPath("git"); err != nil {
		t.Skip("git not on PATH")
	}
	out, err := exec.Command("git", "rev-parse", "--show-toplevel").Output()
	if err != nil {
		t.Skipf("not in a git checkout: %v", err)
	}
	root = strings.TrimSpace(string(out))
	out, err = exec.Command("git", "-C", root, "ls-files", "-z").Output()
	require.NoError(t, err)
	tracked := strings.Split(strings.TrimRight(string(out), "\x00"), "\x00")
	var nested []string
	for _, f := range tracked {
		if path.Base(f) == "go.mod" && f != "go.mod" {
			nested = append(nested, path.Dir(f)+"/")
		}
	}
	require.Contains(t, nested, "bench/", "the nested modules are not where they were")
	require.Contains(t, nested, "redisyncotel/")
outer:
	for _, f := range tracked {
		for _, n := range nested {
			if strings.HasPrefix(f, n) {
				continue outer
			}
		}
		files = append(files, f)
	}
	return root, files
}

// The root module's zip holds no executable and no file over 1 MB (two
// 12 MB binaries once shipped to every `go get`).
func TestModuleZipHoldsNoBinaryAndNoLargeFile(t *testing.T) {
	root, files := moduleFiles(t)
	require.Contains(t, files, "cmd/redisync/main.go")
	for _, f := range files {
		fi, err := os.Lstat(filepath.Join(root, f))
		if err != nil || !fi.Mode().IsRegular() {
			continue // deleted in the work tree, or a symlink (not zipped)
		}
		assert.LessOrEqual(t, fi.Size(), int64(maxModuleFile), "%s ships in the module zip and is over 1 MB", f)
		fh, err := os.Open(filepath.Join(root, f))
		require.NoError(t, err)
		head := make([]byte, 4)
		n, _ := io.ReadFull(fh, head)
		fh.Close()
		assert.Empty(t, binaryKind(head[:n]), "%s ships in the module zip and is an executable", f)
	}
	// The check can fail: the binary these tests built is caught.
	fh, err := os.Open(binary)
	require.NoError(t, err)
	defer fh.Close()
	head := make([]byte, 4)
	_, err = io.ReadFull(fh, head)
	require.NoError(t, err)
	assert.Equal(t, "ELF", binaryKind(head))
}
