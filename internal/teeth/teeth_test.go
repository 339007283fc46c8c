package main

import (
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// root is the module root, from this package's directory.
const root = "../.."

// Every mutant parses, names a package that exists, and still applies to
// the tree: a change that moves a mutant's old text fails here, in make
// test, before make teeth runs.
func TestEveryMutantApplies(t *testing.T) {
	ms, err := load("mutants")
	require.NoError(t, err)
	require.NotEmpty(t, ms)
	for _, m := range ms {
		files, err := m.apply(root)
		if !assert.NoError(t, err) {
			continue
		}
		assert.NotEmpty(t, m.doc, "%s: says what it breaks", m.name)
		dir := filepath.Join(root, filepath.FromSlash(m.pkg))
		if assert.DirExists(t, dir, "%s: its package", m.name) {
			for _, name := range testNames(m.test) {
				assert.True(t, declares(t, dir, name), "%s: no test %s in %s", m.name, name, m.pkg)
			}
		}
		for p, content := range files {
			orig, err := os.ReadFile(filepath.Join(root, p))
			require.NoError(t, err)
			assert.NotEqual(t, string(orig), content, "%s: changes %s", m.name, p)
		}
	}
}

// A mutant whose old text no longer occurs exactly once is stale, and the
// error names the mutant, its line and the file.
func TestStaleMutantFailsLoudly(t *testing.T) {
	for _, tc := range []struct {
		old   string
		count int
	}{
		{"func NoSuchFunctionInLocker()", 0},
		{"\treturn err", strings.Count(readFile(t, "locker.go"), "\treturn err")},
	} {
		require.NotEqual(t, 1, tc.count)
		m := writeMutant(t, "package .\ntest ^TestX$\n--- locker.go\n<<<\n"+tc.old+"\n===\n>>>\n")
		_, err := m.apply(root)
		var stale *staleError
		require.ErrorAs(t, err, &stale)
		assert.Equal(t, tc.count, stale.count)
		assert.Contains(t, err.Error(), "probe.mutant line 4")
		assert.Contains(t, err.Error(), "locker.go")
	}
}

// Replacements apply in order, in the file's text; an empty replacement
// deletes.
func TestReplacementsApplyInOrder(t *testing.T) {
	m := writeMutant(t, `# probe: two edits of one file
package .
test ^TestX$
--- locker.go
<<<
package redisync
===
package redisync // one
>>>
<<<
package redisync // one
===
package redisync // two
# not a comment: part of the text
>>>
`)
	assert.Equal(t, []string{"probe: two edits of one file"}, m.doc)
	files, err := m.apply(root)
	require.NoError(t, err)
	assert.Contains(t, files["locker.go"], "package redisync // two\n# not a comment: part of the text\n")
}

func TestMalformedMutantsAreRefused(t *testing.T) {
	for _, text := range []string{
		"test ^TestX$\n--- locker.go\n<<<\na\n===\nb\n>>>\n",              // no package
		"package .\n--- locker.go\n<<<\na\n===\nb\n>>>\n",                 // no test
		"package .\ntest ^TestX$\n",                                       // no file
		"package .\ntest ^TestX$\n--- locker.go\n<<<\na\n===\nb\n",        // no >>>
		"package .\ntest ^TestX$\n<<<\na\n===\nb\n>>>\n",                  // no ---
		"package .\ntest ^TestX$\nfalgs -race\n--- locker.go\n",           // unknown key
		"package .\ntest ^TestX$\n--- ../x.go\n<<<\na\n===\nb\n>>>\n",     // outside the module
		"package .\ntest ^TestX$\n--- locker.go\n<<<\n===\nb\n>>>\n",      // empty old text
		"package .\ntest ^TestX$\n--- locker.go\nstray\n<<<\na\n===\n>>>", // stray line
	} {
		p := filepath.Join(t.TempDir(), "probe.mutant")
		require.NoError(t, os.WriteFile(p, []byte(text), 0o644))
		_, err := parse(p)
		assert.Error(t, err, "%q", text)
	}
}

// The shares of n partition the mutants, and -rotate's k is HEAD's.
func TestSharesPartitionTheMutants(t *testing.T) {
	ms, err := load("mutants")
	require.NoError(t, err)
	const n = 3
	seen := map[string]int{}
	for k := range n {
		for _, m := range shareOf(ms, k, n) {
			seen[m.name]++
		}
	}
	assert.Len(t, seen, len(ms))
	for name, c := range seen {
		assert.Equal(t, 1, c, name)
	}
	k, gotN, err := parseShare("2/3", false, root)
	require.NoError(t, err)
	assert.Equal(t, [2]int{2, 3}, [2]int{k, gotN})
	for _, bad := range []string{"3/3", "x/3", "1/0", "3"} {
		_, _, err := parseShare(bad, false, root)
		assert.Error(t, err, bad)
	}
	_, _, err = parseShare("1/3", true, root)
	assert.Error(t, err, "-rotate picks k itself")
	if _, err := exec.LookPath("git"); err == nil {
		k, gotN, err := parseShare("3", true, root)
		if err == nil { // a tree outside git has no HEAD
			assert.Equal(t, 3, gotN)
			assert.True(t, k >= 0 && k < 3)
		}
	}
}

// testNames are the test names a -run pattern of the form ^TestX$ or
// ^(TestX|TestY)$ names (none for another form).
func testNames(pattern string) []string {
	m := regexp.MustCompile(`^\^\(?((?:Test\w+\|?)+)\)?\$$`).FindStringSubmatch(pattern)
	if m == nil {
		return nil
	}
	return strings.Split(m[1], "|")
}

// declares reports whether a _test.go file of dir declares the test name.
func declares(t *testing.T, dir, name string) bool {
	paths, err := filepath.Glob(filepath.Join(dir, "*_test.go"))
	require.NoError(t, err)
	decl := regexp.MustCompile(`(?m)^func ` + name + `\(t \*testing\.T\)`)
	for _, p := range paths {
		data, err := os.ReadFile(p)
		require.NoError(t, err)
		if decl.Match(data) {
			return true
		}
	}
	return false
}

func writeMutant(t *testing.T, text string) *mutant {
	t.Helper()
	p := filepath.Join(t.TempDir(), "probe.mutant")
	require.NoError(t, os.WriteFile(p, []byte(text), 0o644))
	m, err := parse(p)
	require.NoError(t, err)
	return m
}

func readFile(t *testing.T, p string) string {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(root, p))
	require.NoError(t, err)
	return string(data)
}

func TestTestNamesOfAPattern(t *testing.T) {
	assert.Equal(t, []string{"TestA"}, testNames("^TestA$"))
	assert.Equal(t, []string{"TestA", "TestB"}, testNames("^(TestA|TestB)$"))
	assert.Nil(t, testNames("TestA"))
}
