package doccheck

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// A row of docs/packages.md's table: "| `path` | what |".
var packageRow = regexp.MustCompile("(?m)^\\| `([^`]+)` \\|")

// docs/packages.md is the map a newcomer reads first: every package of the
// root module is on it, and nothing that is not a package.
func TestPackagesDocListsEveryPackage(t *testing.T) {
	root := filepath.Join("..", "..")
	var pkgs []string
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() {
			return nil
		}
		rel, _ := filepath.Rel(root, path)
		if rel != "." {
			name := d.Name()
			if strings.HasPrefix(name, ".") || name == "testdata" || name == "node_modules" || name == "target" {
				return filepath.SkipDir
			}
			if _, err := os.Stat(filepath.Join(path, "go.mod")); err == nil {
				return filepath.SkipDir // a module of its own (bench/, redisyncotel): a row of its own
			}
		}
		entries, err := os.ReadDir(path)
		if err != nil {
			return err
		}
		for _, e := range entries {
			if n := e.Name(); strings.HasSuffix(n, ".go") && !strings.HasSuffix(n, "_test.go") {
				if rel == "." {
					rel = "redisync"
				}
				pkgs = append(pkgs, filepath.ToSlash(rel))
				break
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(root, "docs", "packages.md"))
	if err != nil {
		t.Fatal(err)
	}
	listed := map[string]bool{}
	for _, m := range packageRow.FindAllStringSubmatch(string(b), -1) {
		listed[strings.TrimSuffix(m[1], "/")] = true
	}
	var missing []string
	for _, p := range pkgs {
		if !listed[p] {
			missing = append(missing, p)
		}
	}
	slices.Sort(missing)
	if len(missing) > 0 {
		t.Errorf("docs/packages.md has no row for: %s", strings.Join(missing, ", "))
	}
}
