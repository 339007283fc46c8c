package scripts

import (
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// defined lists the helpers a piece of assembled source defines, in order.
func defined(src string) []string {
	var out []string
	for _, d := range parseDefinitions(src) {
		out = append(out, d.name)
	}
	return out
}

func TestAssembleDefinesOnlyTheHelpersAScriptUsesInFileOrder(t *testing.T) {
	src := "return keep_token(1, KEYS[1])\n"
	got := assemble(src)
	if !strings.HasSuffix(got, src) {
		t.Fatalf("the script does not follow its helpers:\n%s", got)
	}
	want := []string{"now_us", "KEEP_TOKEN_MS", "keep_token"}
	if d := defined(strings.TrimSuffix(got, src)); strings.Join(d, " ") != strings.Join(want, " ") {
		t.Fatalf("defines %v, want %v (keep_token's own helpers, before it)", d, want)
	}
}

func TestAssemblePutsHelpersOnlyRarePathsUseAfterTheMark(t *testing.T) {
	block := "if now_us() > 0 then\n  return 1\nend\n"
	src := block + rareMark + ": the rest.\nreturn keep_token(1, KEYS[1])\n"
	got := assemble(src)
	common, rare, ok := strings.Cut(got, "\n"+rareMark)
	at := strings.Index(common, block)
	if !ok || at < 0 {
		t.Fatalf("the script's common path or mark is gone:\n%s", got)
	}
	if d := defined(common[:at]); strings.Join(d, " ") != "now_us" {
		t.Fatalf("before the common path: %v, want now_us alone", d)
	}
	if d := defined(common[at+len(block):]); strings.Join(d, " ") != "KEEP_TOKEN_MS keep_token" {
		t.Fatalf("between the common path and the mark: %v, want KEEP_TOKEN_MS keep_token", d)
	}
	if !strings.HasPrefix(rare, ": the rest.\nreturn keep_token") {
		t.Fatalf("the rare paths do not follow the mark:\n%s", rare)
	}
}

// The common paths write keep_token's expiry as a literal (a Lua number
// would cost a printf per call): it must be KEEP_TOKEN_MS.
func TestCommonPathsKeepTheLastTokenForKeepTokenMs(t *testing.T) {
	lib, err := os.ReadFile("lib.lua")
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^local KEEP_TOKEN_MS = (\d+)$`).FindSubmatch(lib)
	if m == nil {
		t.Fatal("lib.lua defines no KEEP_TOKEN_MS")
	}
	files, _ := filepath.Glob("*.lua")
	literal := regexp.MustCompile(`'PX', '(\d+)'`)
	seen := 0
	for _, f := range files {
		src, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		for _, l := range literal.FindAllSubmatch(src, -1) {
			seen++
			if string(l[1]) != string(m[1]) {
				t.Errorf("%s keeps a token for %s ms, KEEP_TOKEN_MS is %s", f, l[1], m[1])
			}
		}
	}
	if seen == 0 {
		t.Fatal("no script writes the expiry as a literal: the test is stale")
	}
}

// A helper file a script opens with (rwlock_lib.lua) is trimmed as lib.lua
// is: what the script does not use goes, and its own text stays as it is.
func TestAssembleTrimsTheHelpersAScriptOpensWith(t *testing.T) {
	own := "-- own helpers\nlocal MARK = 'x'\nlocal function unused()\n  return MARK\nend\nlocal function used()\n  return now_us()\nend\n"
	body := "-- the script\nlocal a = used()\nreturn a\n"
	got := assemble(own + body)
	if !strings.HasSuffix(got, body) {
		t.Fatalf("the script's own text changed:\n%s", got)
	}
	if d := defined(strings.TrimSuffix(got, body)); strings.Join(d, " ") != "now_us used" {
		t.Fatalf("defines %v, want now_us used", d)
	}
}
