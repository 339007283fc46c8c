package outside_test

import (
	"archive/zip"
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"strings"
	"testing"
	"time"
	"unicode"
)

// version is the version the proxy serves every module of the repository
// at: the first tag, which redisyncotel's go.mod requires.
const version = "v0.1.0"

// module is one module of the repository: its path and its directory.
type module struct {
	path string // e.g. github.com/redisync/redisync/redisyncotel
	dir  string // absolute
}

// repoModules returns the repository's published modules: the root module
// (the one this test belongs to) and redisyncotel.
func repoModules(t *testing.T) (root string, mods []module) {
	t.Helper()
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		t.Fatalf("go env GOMOD: %v", err)
	}
	root = filepath.Dir(strings.TrimSpace(string(out)))
	for _, dir := range []string{root, filepath.Join(root, "redisyncotel")} {
		mods = append(mods, module{path: modulePath(t, filepath.Join(dir, "go.mod")), dir: dir})
	}
	return root, mods
}

// modulePath reads the module directive of a go.mod file.
func modulePath(t *testing.T, gomod string) string {
	t.Helper()
	data, err := os.ReadFile(gomod)
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(data), "\n") {
		if p, ok := strings.CutPrefix(strings.TrimSpace(line), "module "); ok {
			return strings.Trim(strings.TrimSpace(p), `"`)
		}
	}
	t.Fatalf("%s: no module directive", gomod)
	return ""
}

// moduleFiles lists the files of the module in dir as a tag would publish
// them: what git tracks under dir, less nested modules (directories with a
// go.mod of their own, their testdata included) and vendor directories.
// Paths are slash-separated and relative to dir.
func moduleFiles(t *testing.T, dir string) []string {
	t.Helper()
	cmd := exec.Command("git", "ls-files", "-z", "--cached", "--", ".")
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("git ls-files in %s (the test needs a git checkout): %v", dir, err)
	}
	all := strings.Split(strings.TrimSuffix(string(out), "\x00"), "\x00")
	var nested []string // directories of nested modules, with a trailing "/"
	for _, f := range all {
		if path.Base(f) == "go.mod" && f != "go.mod" {
			nested = append(nested, path.Dir(f)+"/")
		}
	}
	var files []string
next:
	for _, f := range all {
		for _, n := range nested {
			if strings.HasPrefix(f, n) {
				continue next
			}
		}
		if strings.HasPrefix(f, "vendor/") || strings.Contains(f, "/vendor/") {
			continue
		}
		st, err := os.Lstat(filepath.Join(dir, filepath.FromSlash(f)))
		if err != nil || !st.Mode().IsRegular() {
			continue // deleted in the working tree, or a symlink (modules hold neither)
		}
		files = append(files, f)
	}
	if len(files) == 0 {
		t.Fatalf("git tracks no file in %s", dir)
	}
	return files
}

// escapePath is a module path as the proxy protocol spells it in URLs and
// directories: each upper-case letter becomes '!' and its lower case.
func escapePath(p string) string {
	var b strings.Builder
	for _, r := range p {
		if unicode.IsUpper(r) {
			b.WriteByte('!')
			r = unicode.ToLower(r)
		}
		b.WriteRune(r)
	}
	return b.String()
}

// writeProxy writes a module proxy in dir that serves each module at
// version: <escaped path>/@v/list, .info, .mod and .zip.
func writeProxy(t *testing.T, dir string, mods []module) {
	t.Helper()
	for _, m := range mods {
		vdir := filepath.Join(dir, filepath.FromSlash(escapePath(m.path)), "@v")
		if err := os.MkdirAll(vdir, 0o755); err != nil {
			t.Fatal(err)
		}
		gomod, err := os.ReadFile(filepath.Join(m.dir, "go.mod"))
		if err != nil {
			t.Fatal(err)
		}
		info := fmt.Sprintf(`{"Version":%q,"Time":%q}`+"\n", version, time.Now().UTC().Format(time.RFC3339))
		for name, data := range map[string][]byte{
			"list":            []byte(version + "\n"),
			version + ".info": []byte(info),
			version + ".mod":  gomod,
			version + ".zip":  zipModule(t, m),
		} {
			if err := os.WriteFile(filepath.Join(vdir, name), data, 0o644); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// zipModule is the module's zip as a proxy serves it: every file under
// "<path>@<version>/".
func zipModule(t *testing.T, m module) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := zip.NewWriter(&buf)
	for _, f := range moduleFiles(t, m.dir) {
		data, err := os.ReadFile(filepath.Join(m.dir, filepath.FromSlash(f)))
		if err != nil {
			t.Fatal(err)
		}
		w, err := zw.Create(m.path + "@" + version + "/" + f)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Write(data); err != nil {
			t.Fatal(err)
		}
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}
