package main

import (
	"bytes"
	"net/url"
	"slices"
	"strings"
	"testing"

	"github.com/redisync/redisync/internal/redistest"
)

// fragmentLen is the length of the password pieces the redaction fuzz looks
// for in the output: a piece this long that the output shows and the rest of
// the URL does not is a leak.
const fragmentLen = 4

// FuzzNoOutputCarriesAPasswordFragment puts passwords with every character a
// URL treats specially (@ : / ? # % [ ] space ...) through every error path
// of the command's connection — the URL parse, an unreachable server, a
// wrong password, TLS with an unknown CA, a Sentinel that is not one, a
// single server taken for a Cluster — raw and percent-encoded in the URL
// and by --password, and through a URL given where no URL belongs — as
// the subcommand, as inspect's NAME (table and JSON), as run's command and
// among its arguments — and asserts that no output shows a fragment of the
// password. Its seeds (testdata/fuzz) are the reported cases; make test runs
// them, CI fuzzes for new inputs.
func FuzzNoOutputCarriesAPasswordFragment(f *testing.F) {
	authed := redistest.Start(f)
	redistest.Do(f, authed.Client(f), "CONFIG", "SET", "requirepass", "the-right-one")
	plain := redistest.Start(f)
	tlsSrv := redistest.StartTLS(f)
	const down = "127.0.0.1:1"
	const elsewhere = "db.internal:6379" // a URL's host where no URL belongs

	// misplaced are the invocations that carry a URL where a subcommand, a
	// NAME, or run's command belongs.
	misplaced := func(url string) [][]string {
		return [][]string{
			{url, "inspect", "x"},
			{"inspect", "--redis", plain.Addr(), url},
			{"inspect", "--json", "--redis", plain.Addr(), url},
			{"run", "--wait", "0", "--redis", plain.Addr(), "fuzz:run", "--", url},
			{"run", "--wait", "0", "--redis", plain.Addr(), "fuzz:run", "--", "/nonexistent/cmd", url},
		}
	}

	// The command's own words, printed whatever the password: a fragment
	// found in them is not a leak.
	var vocabulary strings.Builder
	for _, args := range append([][]string{
		{"inspect", "--redis", "redis://user:x@" + down, "x"},
		{"inspect", "--redis", "redis://user:x@" + authed.Addr(), "x"},
		{"inspect", "--redis", "rediss://user:x@" + tlsSrv.TLSAddr, "x"},
		{"inspect", "--sentinel", "m", "--redis", "redis://user:x@" + authed.Addr(), "x"},
		{"inspect", "--redis", "redis://user:x@" + down + "/notadb", "x"},
		{"inspect", "--redis", "redis://user:x@[::1", "x"},
		{"inspect", "--redis", "redis://user:%zz@" + down, "x"},
		{"inspect", "--redis", "redis://user:a b@" + down, "x"},
		{"inspect", "--redis", "redis://user:1#2@" + down, "x"},
	}, misplaced("redis://user:x@"+elsewhere)...) {
		var out bytes.Buffer
		run(args, &out, &out)
		vocabulary.Write(out.Bytes())
	}

	f.Fuzz(func(t *testing.T, pw string) {
		escaped := url.UserPassword("user", pw).String()
		type invocation struct {
			rest string // the URL without the password, or the flags
			args []string
		}
		cases := []invocation{
			{"redis://user:@" + down, []string{"--redis", "redis://user:" + pw + "@" + down}},
			{"redis://user:@" + authed.Addr(), []string{"--redis", "redis://user:" + pw + "@" + authed.Addr()}},
			{"rediss://user:@" + tlsSrv.TLSAddr, []string{"--redis", "rediss://user:" + pw + "@" + tlsSrv.TLSAddr}},
			{"redis://user:@" + authed.Addr(), []string{"--sentinel", "m", "--redis", "redis://user:" + pw + "@" + authed.Addr()}},
			{"redis://:@" + authed.Addr(), []string{"--cluster", "--redis", "redis://:" + pw + "@" + authed.Addr()}},
			{"redis://user:@" + down + "/0", []string{"--redis", "redis://user:" + pw + "@" + down + "/0"}},
			{"redis://@" + authed.Addr(), []string{"--redis", "redis://" + escaped + "@" + authed.Addr()}},
			{"redis://" + authed.Addr(), []string{"--redis", authed.Addr(), "--password", pw}},
		}
		for i := range cases {
			cases[i].args = append(append([]string{"inspect"}, cases[i].args...), "x")
		}
		for _, args := range misplaced("redis://user:" + pw + "@" + elsewhere) {
			cases = append(cases, invocation{"redis://user:@" + elsewhere + plain.Addr(), args})
		}
		for _, c := range cases {
			// Each invocation starts with the secrets a process starts
			// with: one's registered password does not hide another's leak.
			forget := keepSecrets()
			var out bytes.Buffer
			run(c.args, &out, &out)
			forget()
			if leak := fragmentShown(pw, out.String(), c.rest+vocabulary.String()); leak != "" {
				t.Fatalf("%q shows %q of the password %q:\n%s", c.args, leak, pw, out.String())
			}
		}
	})
}

// fragmentShown returns a piece of pw that out shows and known does not
// contain, or "".
func fragmentShown(pw, out, known string) string {
	for i := 0; i+fragmentLen <= len(pw); i++ {
		if frag := pw[i : i+fragmentLen]; strings.Contains(out, frag) && !strings.Contains(known, frag) {
			return frag
		}
	}
	return ""
}

// keepSecrets forgets, when the returned function runs, the secrets
// registered after keepSecrets: the fuzzer's inputs would pile up in the
// redactor's list, and one input's password would hide another's leak.
func keepSecrets() func() {
	secrets.Lock()
	kept := slices.Clone(secrets.vals)
	secrets.Unlock()
	return func() {
		secrets.Lock()
		defer secrets.Unlock()
		secrets.vals = kept
	}
}

// A registered secret is removed before the user-info pattern rewrites a
// URL, so the pattern, which ends the user info at the first '@', cannot
// split a password with an '@' and leave its tail in the text.
func TestRedactRemovesSecretsBeforeRewritingURLs(t *testing.T) {
	defer keepSecrets()()
	addSecret("p@ssw0rdXYZ")
	in := "cannot reach Redis at redis://user:p@ssw0rdXYZ@host:1: refused"
	if got, want := redactString(in), "cannot reach Redis at redis://***@host:1: refused"; got != want {
		t.Fatalf("redact(%q) = %q, want %q", in, got, want)
	}
}
