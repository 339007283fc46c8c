package mixedversion

import (
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strconv"
	"strings"
	"testing"
)

// TestLayoutDocNamesEverything keeps docs/layout.md honest: every string
// constant of internal/keys (each key and channel prefix), every script,
// every hash field a script writes or reads by a literal name, every message
// a script publishes, the Go side's own field prefixes ("redisync:...") and
// the holder-info version must appear in it, inside a `code` span; and
// every key prefix or script it names must exist. A name the code gains
// without the document is a layout change nobody wrote down.
func TestLayoutDocNamesEverything(t *testing.T) {
	root := repoRoot(t)
	doc, err := os.ReadFile(filepath.Join(root, "docs", "layout.md"))
	if err != nil {
		t.Fatal(err)
	}
	spans := codeSpans(string(doc))
	inDoc := func(s string) bool {
		for _, sp := range spans {
			if strings.Contains(sp, s) {
				return true
			}
		}
		return false
	}
	want := map[string]string{} // literal -> where the code has it
	for name, v := range stringConsts(t, filepath.Join(root, "internal", "keys")) {
		want[v] = "internal/keys." + name
	}
	luaFiles, err := filepath.Glob(filepath.Join(root, "internal", "scripts", "*.lua"))
	if err != nil || len(luaFiles) == 0 {
		t.Fatalf("no scripts found (%v)", err)
	}
	for _, f := range luaFiles {
		base := filepath.Base(f)
		want[base] = "internal/scripts/" + base
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, lit := range luaLayoutLiterals(string(b)) {
			want[lit] = "scripts/" + base
		}
	}
	for lit, where := range goFieldPrefixes(t, root) {
		want[lit] = where
	}
	version := stringConsts(t, filepath.Join(root, "internal", "holderinfo"))["Version"]
	if version == "" {
		t.Fatal("internal/holderinfo: Version not found")
	}
	want["internal/holderinfo"] = "internal/holderinfo"
	want[version+"|<server time in ms"] = "internal/holderinfo: Version = " + strconv.Quote(version)
	for _, kind := range append([]string{"multilock", "latch"}, Kinds...) {
		if !strings.HasSuffix(kind, "-read") { // a side of the rwlock
			want["## "+kind] = "primitive " + kind
		}
	}
	var missing []string
	for lit, where := range want {
		found := inDoc(lit)
		if strings.HasPrefix(lit, "## ") {
			found = regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(lit) + `\b`).Match(doc)
		}
		if !found {
			missing = append(missing, strconv.Quote(lit)+" (from "+where+")")
		}
	}
	sort.Strings(missing)
	if len(missing) > 0 {
		t.Errorf("docs/layout.md does not name %d things the code uses (in a `code` span, or a heading for a primitive); "+
			"write each down (a layout change also bumps the layout version):\n\t%s", len(missing), strings.Join(missing, "\n\t"))
	}
	// And the other way: a prefix or script the document names must exist
	// (a name removed from the code must leave the document too).
	var stale []string
	for _, sp := range spans {
		for _, m := range docNames.FindAllString(sp, -1) {
			m = strings.TrimRight(m, "_:")
			if _, ok := want[m]; !ok && !prefixOfWanted(m, want) {
				stale = append(stale, strconv.Quote(m))
			}
		}
	}
	sort.Strings(stale)
	if len(stale) > 0 {
		t.Errorf("docs/layout.md names %d prefixes or scripts the code does not have: %s", len(stale), strings.Join(stale, ", "))
	}
	if len(want) < 40 {
		t.Errorf("only %d names collected from the code: the extraction is broken", len(want))
	}
}

// docNames matches what the document names as a key prefix or a script.
var docNames = regexp.MustCompile(`\b(?:redisync|redisson)_[a-z_]+|\b[a-z_]+\.lua\b`)

// prefixOfWanted reports whether m is a constant of the code with a
// separator cut off, or OwnPrefix itself ("redisync_" trimmed to
// "redisync").
func prefixOfWanted(m string, want map[string]string) bool {
	for _, suffix := range []string{"_", "__", ":"} {
		if _, ok := want[m+suffix]; ok {
			return true
		}
	}
	return false
}

// codeSpans returns the text of every `...` span and indented code line.
func codeSpans(doc string) []string {
	var out []string
	for _, m := range regexp.MustCompile("`([^`]+)`").FindAllStringSubmatch(doc, -1) {
		out = append(out, m[1])
	}
	for _, line := range strings.Split(doc, "\n") {
		if strings.HasPrefix(line, "    ") {
			out = append(out, strings.TrimSpace(line))
		}
	}
	return out
}

// stringConsts returns the string constants declared in the non-test Go
// files of dir, by name.
func stringConsts(t *testing.T, dir string) map[string]string {
	t.Helper()
	fset := token.NewFileSet()
	pkgs, err := parser.ParseDir(fset, dir, func(fi os.FileInfo) bool { return !strings.HasSuffix(fi.Name(), "_test.go") }, 0)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, p := range pkgs {
		for _, f := range p.Files {
			for _, d := range f.Decls {
				g, ok := d.(*ast.GenDecl)
				if !ok || g.Tok != token.CONST {
					continue
				}
				for _, s := range g.Specs {
					vs := s.(*ast.ValueSpec)
					for i, v := range vs.Values {
						if lit, ok := v.(*ast.BasicLit); ok && lit.Kind == token.STRING {
							if s, err := strconv.Unquote(lit.Value); err == nil {
								out[vs.Names[i].Name] = s
							}
						}
					}
				}
			}
		}
	}
	return out
}

var (
	// A hash command on a key with literal field names after it.
	luaHashCall = regexp.MustCompile(`redis\.p?call\('(?:hset|hsetnx|hget|hexists|hincrby|hdel)',\s*[^,()]+,\s*([^)]*)\)`)
	// A publish: notify(publish, channel, 'message').
	luaNotify = regexp.MustCompile(`notify\([^,]+,[^,]+,\s*'([^']*)'\)`)
	luaQuoted = regexp.MustCompile(`'([^']*)'`)
	decimal   = regexp.MustCompile(`^[0-9]+$`)
)

// luaLayoutLiterals returns the hash fields a script names literally and
// the messages it publishes.
func luaLayoutLiterals(src string) []string {
	var out []string
	for _, m := range luaHashCall.FindAllStringSubmatch(src, -1) {
		for _, q := range luaQuoted.FindAllStringSubmatch(m[1], -1) {
			// A formatted number is a token: the document writes <token>.
			v := strings.ReplaceAll(q[1], "%.0f", "<token>")
			if strings.TrimSpace(v) != "" && !decimal.MatchString(v) {
				out = append(out, v)
			}
		}
	}
	for _, m := range luaNotify.FindAllStringSubmatch(src, -1) {
		out = append(out, m[1])
	}
	return out
}

// goFieldPrefixes returns the "redisync:..." literals of the non-test Go
// code outside this package: fields the Go side names in lock hashes.
func goFieldPrefixes(t *testing.T, root string) map[string]string {
	t.Helper()
	lit := regexp.MustCompile(`"(redisync:[a-z_]+:?)"`)
	out := map[string]string{}
	err := filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (strings.HasPrefix(d.Name(), ".") || d.Name() == "mixedversion" || d.Name() == "testdata" || d.Name() == "node_modules") {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") {
			return nil
		}
		b, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		for _, m := range lit.FindAllStringSubmatch(string(b), -1) {
			rel, _ := filepath.Rel(root, path)
			out[m[1]] = rel
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
