package doccheck

import (
	"go/ast"
	"go/doc"
	"go/parser"
	"go/token"
	"io/fs"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// An internal package or one of its identifiers, as a doc comment would
// name it: "internal/hold", "hold.OpLock", "lockopt's".
var internalName = regexp.MustCompile(`\binternal/[a-z]+|\b(?:engine|hold|lockopt|obs|errs|keys|wakeup|holderinfo)\.[A-Z][A-Za-z]*`)

// The public packages' docs (what go doc shows a user) name no internal
// package: a user can open none of them. They point to docs/ instead.
func TestPublicDocsNameNoInternalPackage(t *testing.T) {
	root := filepath.Join("..", "..")
	for _, dir := range []string{".", "rlock", "fairlock", "rwlock", "semaphore", "multilock", "redlock", "latch", "ratelimit", "watchdog", "redisynctest"} {
		fset := token.NewFileSet()
		pkgs, err := parser.ParseDir(fset, filepath.Join(root, dir), func(fi fs.FileInfo) bool {
			return !strings.HasSuffix(fi.Name(), "_test.go")
		}, parser.ParseComments)
		if err != nil {
			t.Fatal(err)
		}
		for _, pkg := range pkgs {
			files := make([]*ast.File, 0, len(pkg.Files))
			for _, f := range pkg.Files {
				files = append(files, f)
			}
			p, err := doc.NewFromFiles(fset, files, "example.com/"+dir)
			if err != nil {
				t.Fatal(err)
			}
			check := func(what, text string) {
				if m := internalName.FindString(text); m != "" {
					t.Errorf("%s: the doc of %s names %q", dir, what, m)
				}
			}
			check("the package", p.Doc)
			for _, c := range p.Consts {
				check(strings.Join(c.Names, ", "), c.Doc)
			}
			for _, v := range p.Vars {
				check(strings.Join(v.Names, ", "), v.Doc)
			}
			for _, f := range p.Funcs {
				check(f.Name, f.Doc)
			}
			for _, ty := range p.Types {
				check(ty.Name, ty.Doc)
				for _, f := range ty.Funcs {
					check(f.Name, f.Doc)
				}
				for _, m := range ty.Methods {
					check(ty.Name+"."+m.Name, m.Doc)
				}
				for _, c := range ty.Consts {
					check(strings.Join(c.Names, ", "), c.Doc)
				}
				for _, v := range ty.Vars {
					check(strings.Join(v.Names, ", "), v.Doc)
				}
			}
		}
	}
}
