package doccheck

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/redisync/redisync/internal/keys"
	"github.com/redisync/redisync/internal/lockopt"
)

// withOwnerDoc is the doc comment above a package's WithOwner.
var withOwnerDoc = regexp.MustCompile(`(?s)((?://[^\n]*\n)+)func WithOwner\(`)

// TestWithOwnerDocsStateTheRefusedIDs: every WithOwner doc names each form
// of owner id keys.ReservedOwner refuses and the error it gives; the
// read-write lock's also states its shape rule.
func TestWithOwnerDocsStateTheRefusedIDs(t *testing.T) {
	for _, pkg := range []string{"rlock", "fairlock", "rwlock"} {
		b, err := os.ReadFile(filepath.Join("..", "..", pkg, "options.go"))
		if err != nil {
			t.Fatal(err)
		}
		m := withOwnerDoc.FindSubmatch(b)
		if m == nil {
			t.Fatalf("%s: no doc comment above WithOwner", pkg)
		}
		doc := strings.Join(strings.Fields(strings.ReplaceAll(string(m[1]), "//", "")), " ")
		want := []string{`"` + keys.OwnFieldPrefix + `"`, `"` + keys.ModeField + `"`, `"` + keys.WriteFieldSuffix + `"`,
			"empty", "ErrInvalidOwner", "without I/O", fmt.Sprintf("longer than MaxOwnerLength (%d bytes)", lockopt.MaxOwnerLength)}
		if pkg == "rwlock" {
			want = append(want, "not all digits", `"<part>:<digits>"`)
		}
		for _, w := range want {
			if !strings.Contains(doc, w) {
				t.Errorf("%s.WithOwner's doc does not say %s: %s", pkg, w, doc)
			}
		}
		// The id the rule is checked on must be refused by the code too.
		if keys.ReservedOwner(keys.OwnFieldPrefix+"token", false) == "" || keys.ReservedOwner(keys.ModeField, false) == "" ||
			keys.ReservedOwner("x"+keys.WriteFieldSuffix, false) == "" || keys.ReservedOwner("", false) == "" {
			t.Fatal("keys.ReservedOwner accepts a form the docs say it refuses")
		}
		var long, longest lockopt.Options
		long.SetOwner(strings.Repeat("o", lockopt.MaxOwnerLength+1))
		longest.SetOwner(strings.Repeat("o", lockopt.MaxOwnerLength))
		if long.CheckOwner(pkg, "x") == nil || longest.CheckOwner(pkg, "x") != nil {
			t.Fatal("lockopt.CheckOwner does not refuse exactly the ids longer than MaxOwnerLength")
		}
	}
}
