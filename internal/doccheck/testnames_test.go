package doccheck

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
)

// A test name as documents cite it: `TestX` or `TestX/sub_test` in code
// spans (the part after the first '/' is a subtest, not checked).
var citedTest = regexp.MustCompile("`(?:[a-z]+ )?(Test[A-Z][A-Za-z0-9_]*)(?:/[^`]*)?`")

// A test function's declaration in a _test.go file.
var declaredTest = regexp.MustCompile(`(?m)^func (Test[A-Z][A-Za-z0-9_]*)\(`)

func TestEveryTestTheDocsNameExists(t *testing.T) {
	root := filepath.Join("..", "..")
	declared := map[string]bool{}
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "node_modules" || d.Name() == ".git" || d.Name() == "target") {
			return filepath.SkipDir
		}
		if !strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range declaredTest.FindAllStringSubmatch(string(b), -1) {
			declared[m[1]] = true
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	docs, err := filepath.Glob(filepath.Join(root, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	docs = append(docs, filepath.Join(root, "README.md"))
	for _, doc := range docs {
		b, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		var missing []string
		for _, m := range citedTest.FindAllStringSubmatch(string(b), -1) {
			if !declared[m[1]] {
				missing = append(missing, m[1])
			}
		}
		slices.Sort(missing)
		missing = slices.Compact(missing)
		if len(missing) > 0 {
			t.Errorf("%s names tests that do not exist: %s", filepath.Base(doc), strings.Join(missing, ", "))
		}
	}
}
