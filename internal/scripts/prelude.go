package scripts

import (
	"regexp"
	"strings"
	"sync"
)

// The helpers a script runs with (lib.lua, keyspace.lua) cost per call: Redis
// runs a script's top level on every EVALSHA, so each helper it defines is a
// closure made per call whether the script calls it or not. withLib
// therefore prepends only the helpers a script uses, directly or through
// other helpers, in their files' order (a Lua local is visible only below
// its definition, and the files define each helper after those it calls).

// definition is one top-level definition of a helper file, with the comment
// lines above it: "local function name(" up to its "end" line, or the one
// line "local NAME = ...".
type definition struct {
	name string
	text string
	uses []string // identifiers in its code, comments left out
}

var (
	defFunc  = regexp.MustCompile(`^local function ([A-Za-z_][A-Za-z0-9_]*)\(`)
	defValue = regexp.MustCompile(`^local ([A-Za-z_][A-Za-z0-9_]*) =`)
	ident    = regexp.MustCompile(`[A-Za-z_][A-Za-z0-9_]*`)
)

// helpers parses lib.lua and keyspace.lua once, on the first script built.
var helpers = sync.OnceValue(func() []definition {
	defs, rest := leadingDefinitions(libSrc+"\n"+keyspaceSrc, defValue)
	if strings.TrimSpace(stripComments(rest)) != "" {
		panic("scripts: a helper file line that defines nothing: " + rest)
	}
	return defs
})

// defConst is a definition a script's own source may open with (a helper
// file of its own, such as rwlock_lib.lua, prepended to it): a constant.
var defConst = regexp.MustCompile(`^local ([A-Za-z_][A-Za-z0-9_]*) = ('[^']*'|-?[0-9][0-9.e]*|true|false)$`)

// leadingDefinitions splits the definitions src opens with from the rest:
// "local function" blocks and the one-line values that value matches, each
// with the comment lines above it. The rest begins at the first other line
// (with the comments above that).
func leadingDefinitions(src string, value *regexp.Regexp) ([]definition, string) {
	var defs []definition
	var pending []string // comments and blank lines before the next definition
	lines := strings.Split(src, "\n")
	for i := 0; i < len(lines); i++ {
		line := lines[i]
		if line == "" || strings.HasPrefix(line, "--") {
			pending = append(pending, line)
			continue
		}
		d := definition{}
		body := []string{line}
		if m := defFunc.FindStringSubmatch(line); m != nil {
			d.name = m[1]
			for i+1 < len(lines) && lines[i] != "end" {
				i++
				body = append(body, lines[i])
			}
			if lines[i] != "end" {
				panic("scripts: helper " + d.name + " has no end line")
			}
		} else if m := value.FindStringSubmatch(line); m != nil {
			d.name = m[1]
		} else {
			return defs, strings.Join(append(pending, lines[i:]...), "\n")
		}
		d.text = strings.Join(append(pending, body...), "\n")
		d.uses = identifiers(strings.Join(body, "\n"))
		pending = nil
		defs = append(defs, d)
	}
	return defs, strings.Join(pending, "\n")
}

// parseDefinitions is leadingDefinitions of a helper file's source.
func parseDefinitions(src string) []definition {
	defs, _ := leadingDefinitions(src, defValue)
	return defs
}

func stripComments(code string) string {
	var b strings.Builder
	for _, line := range strings.Split(code, "\n") {
		if i := strings.Index(line, "--"); i >= 0 {
			line = line[:i]
		}
		b.WriteString(line)
		b.WriteString("\n")
	}
	return b.String()
}

// identifiers lists the names in Lua code, comments left out (a name in a
// string counts too, which at worst keeps a helper the script does not
// need).
func identifiers(code string) []string {
	return ident.FindAllString(stripComments(code), -1)
}

// rareMark begins the line of a script after which its rare paths follow
// (a busy lock, a nested hold, foreign data: the branches its common path
// returned before). Helpers that only they use are defined there, below the
// common path, so a call that returns before the mark never makes them.
const rareMark = "-- Rare paths"

// assemble returns src with the helpers it uses prepended, and, when src
// has a rareMark line, the helpers only its rare paths use put before that
// line. Helper definitions src itself opens with (constants and functions)
// are trimmed and placed the same way, after the shared ones.
func assemble(src string) string {
	own, src := leadingDefinitions(src, defConst)
	defs := append(append([]definition{}, helpers()...), own...)
	common, rare, ok := strings.Cut(src, "\n"+rareMark)
	if !ok {
		text, _ := prelude(defs, src, nil)
		return text + src
	}
	first, have := prelude(defs, common, nil)
	second, _ := prelude(defs, rare, have)
	return first + common + "\n" + second + rareMark + rare
}

// prelude returns the definitions of defs src needs, transitively, in order,
// leaving out those in have, and the names it defines or had.
func prelude(defs []definition, src string, have map[string]bool) (string, map[string]bool) {
	need := map[string]bool{}
	for _, id := range identifiers(src) {
		need[id] = true
	}
	// A definition only uses names defined above it, so one pass from the
	// bottom up sees every use before the definition it names.
	keep := make([]bool, len(defs))
	for i := len(defs) - 1; i >= 0; i-- {
		if need[defs[i].name] {
			keep[i] = true
			for _, id := range defs[i].uses {
				if id != defs[i].name {
					need[id] = true
				}
			}
		}
	}
	var b strings.Builder
	defined := map[string]bool{}
	for n := range have {
		defined[n] = true
	}
	for i, d := range defs {
		if keep[i] && !have[d.name] {
			b.WriteString(d.text)
			b.WriteString("\n")
			defined[d.name] = true
		}
	}
	return b.String(), defined
}
