package mixedversion

import (
	"os"
	"path/filepath"
	"testing"
)

// TestLayoutVersionOfThisTree: the document's title gives this tree's
// layout, a tree without the document is layout 0, and a document without
// the title is an error (never silently 0).
func TestLayoutVersionOfThisTree(t *testing.T) {
	if v, err := LayoutVersion(repoRoot(t)); err != nil || v != 1 {
		t.Errorf("LayoutVersion(this tree) = %d, %v; want 1 (docs/layout.md's title)", v, err)
	}
	empty := t.TempDir()
	if v, err := LayoutVersion(empty); err != nil || v != 0 {
		t.Errorf("LayoutVersion(no docs/layout.md) = %d, %v; want 0", v, err)
	}
	if err := os.MkdirAll(filepath.Join(empty, "docs"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(empty, "docs", "layout.md"), []byte("# Keys\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := LayoutVersion(empty); err == nil {
		t.Error("LayoutVersion of a document without \"layout version N\" in its title: no error")
	}
}

// TestExpect: equal layouts exclude for every kind; layout 0 -> 1 keeps
// every kind but the semaphore (docs/layout.md, measured against ae978fd);
// a pair nobody examined is an error, in either order.
func TestExpect(t *testing.T) {
	for _, kind := range Kinds {
		if must, err := Expect(kind, 1, 1); err != nil || !must {
			t.Errorf("Expect(%s, 1, 1) = %v, %v; want true", kind, must, err)
		}
		want := kind != "semaphore"
		for _, pair := range [][2]int{{0, 1}, {1, 0}} {
			if must, err := Expect(kind, pair[0], pair[1]); err != nil || must != want {
				t.Errorf("Expect(%s, %d, %d) = %v, %v; want %v", kind, pair[0], pair[1], must, err, want)
			}
		}
		if _, err := Expect(kind, 1, 2); err == nil {
			t.Errorf("Expect(%s, 1, 2): no error for layouts with no row", kind)
		}
	}
}
