package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
)

// A mutant is one .mutant file: a defect, the test that must catch it, and
// the replacements that bring the defect back.
type mutant struct {
	name  string   // the file's name without .mutant
	doc   []string // the comment lines, without "# "
	pkg   string   // the package whose test runs (a go test package path)
	test  string   // the -run pattern
	flags []string // extra go test flags
	files []edit   // in file order; a path may come more than once
}

// An edit is one "--- path" section: replacements in one file.
type edit struct {
	path string // relative to the module root, slash-separated
	reps []replacement
}

type replacement struct {
	old, new string
	line     int // of the "<<<", for messages
}

// parse reads a mutant file (the format is in the package doc).
func parse(path string) (*mutant, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	m := &mutant{name: strings.TrimSuffix(filepath.Base(path), ".mutant")}
	fail := func(n int, format string, args ...any) error {
		return fmt.Errorf("%s:%d: %s", path, n, fmt.Sprintf(format, args...))
	}
	const (
		header = iota
		between
		old
		repl
	)
	state := header
	var cur *replacement
	var text []string
	sc := bufio.NewScanner(strings.NewReader(string(data)))
	sc.Buffer(nil, 1<<20)
	n := 0
	for sc.Scan() {
		n++
		line := sc.Text()
		switch state {
		case header, between:
			switch {
			case strings.HasPrefix(line, "--- "):
				p := strings.TrimSpace(line[4:])
				if p == "" || filepath.IsAbs(p) || strings.Contains(p, "..") {
					return nil, fail(n, "bad file %q (a path relative to the module root)", p)
				}
				m.files = append(m.files, edit{path: p})
				state = between
			case line == "<<<":
				if state != between {
					return nil, fail(n, "<<< before any --- file line")
				}
				cur, text, state = &replacement{line: n}, nil, old
			case strings.TrimSpace(line) == "":
			case strings.HasPrefix(line, "#"):
				if state == header {
					m.doc = append(m.doc, strings.TrimSpace(strings.TrimPrefix(line, "#")))
				}
			case state == header:
				key, val, _ := strings.Cut(line, " ")
				val = strings.TrimSpace(val)
				switch key {
				case "package":
					m.pkg = val
				case "test":
					m.test = val
				case "flags":
					m.flags = strings.Fields(val)
				default:
					return nil, fail(n, "unknown line %q (want package, test, flags, # or ---)", line)
				}
			default:
				return nil, fail(n, "unexpected line %q between replacements (want <<<, --- or #)", line)
			}
		case old:
			if line == "===" {
				cur.old, text, state = strings.Join(text, "\n"), nil, repl
				continue
			}
			text = append(text, line)
		case repl:
			if line == ">>>" {
				cur.new = strings.Join(text, "\n")
				f := &m.files[len(m.files)-1]
				f.reps = append(f.reps, *cur)
				state = between
				continue
			}
			text = append(text, line)
		}
	}
	if err := sc.Err(); err != nil {
		return nil, fmt.Errorf("%s: %w", path, err)
	}
	switch {
	case state == old || state == repl:
		return nil, fail(n, "the replacement of line %d has no >>>", cur.line)
	case m.pkg == "" || m.test == "":
		return nil, fmt.Errorf("%s: a mutant needs a package and a test line", path)
	case len(m.files) == 0:
		return nil, fmt.Errorf("%s: no --- file section", path)
	}
	for _, f := range m.files {
		if len(f.reps) == 0 {
			return nil, fmt.Errorf("%s: --- %s has no <<< === >>> block", path, f.path)
		}
		for _, r := range f.reps {
			if r.old == "" {
				return nil, fmt.Errorf("%s:%d: empty old text", path, r.line)
			}
		}
	}
	return m, nil
}

// load parses every mutant of dir, sorted by name.
func load(dir string) ([]*mutant, error) {
	paths, err := filepath.Glob(filepath.Join(dir, "*.mutant"))
	if err != nil {
		return nil, err
	}
	sort.Strings(paths)
	var ms []*mutant
	for _, p := range paths {
		m, err := parse(p)
		if err != nil {
			return nil, err
		}
		ms = append(ms, m)
	}
	return ms, nil
}

// A staleError is a replacement whose old text does not occur exactly once
// in its file: the code moved on, and the mutant must be written again.
type staleError struct {
	mutant, file string
	line, count  int
}

func (e *staleError) Error() string {
	return fmt.Sprintf("stale: %s.mutant line %d: its old text occurs %d times in %s (want exactly once)",
		e.mutant, e.line, e.count, e.file)
}

// apply returns the mutated content of every file the mutant names, keyed
// by the path under root, replacements applied in order (a later one sees
// the earlier ones' result).
func (m *mutant) apply(root string) (map[string]string, error) {
	out := map[string]string{}
	for _, f := range m.files {
		content, ok := out[f.path]
		if !ok {
			data, err := os.ReadFile(filepath.Join(root, filepath.FromSlash(f.path)))
			if err != nil {
				return nil, fmt.Errorf("stale: %s.mutant: %w", m.name, err)
			}
			content = string(data)
		}
		for _, r := range f.reps {
			if c := strings.Count(content, r.old); c != 1 {
				return nil, &staleError{mutant: m.name, file: f.path, line: r.line, count: c}
			}
			content = strings.Replace(content, r.old, r.new, 1)
		}
		out[f.path] = content
	}
	return out, nil
}
