package main

import (
	"bytes"
	"io"
	"regexp"
	"strings"
	"sync"
)

// Every byte the command writes to its own stdout and stderr goes through a
// redactor (see run in main.go), so no message, log line or JSON document can
// carry a credential, whatever path the error took: one rule, applied once at
// the edge, instead of care at every fmt call. The wrapped command's output
// does not pass through it: it is written to the inherited descriptors.

// redacted replaces every secret.
const redacted = "***"

// userinfo matches the user info of a URL ("scheme://user:password@").
// User info ends at the first '@' before the host; '/', whitespace, quotes
// and brackets cannot be part of it (RFC 3986), so the match never runs past
// the URL into the text around it, nor takes the "[user:password@]" of a
// synopsis for a credential. A password with such characters is still
// caught: it is a registered secret (see addSecret).
var userinfo = regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.\-]*://)[^/\s@"'<>\[\]]*@`)

// minSecretLen is the shortest literal secret replaced wherever it occurs: a
// one- or two-letter password would black out ordinary words.
const minSecretLen = 3

// secrets are the passwords this run was given (flag, file, environment, URL),
// replaced verbatim wherever they occur — also where a malformed URL kept the
// user info from being recognised.
var secrets struct {
	sync.Mutex
	vals [][]byte
}

// addSecret registers s to be redacted from every output.
func addSecret(s string) {
	if len(s) < minSecretLen {
		return
	}
	secrets.Lock()
	defer secrets.Unlock()
	for _, v := range secrets.vals {
		if string(v) == s {
			return
		}
	}
	secrets.vals = append(secrets.vals, []byte(s))
}

// redact applies the rule to b: the registered secrets go first, so that
// no other rewriting can split one and leave a piece of it behind (a
// password with an '@' would keep its tail after the user info pattern's
// match).
func redact(b []byte) []byte {
	secrets.Lock()
	for _, s := range secrets.vals {
		b = bytes.ReplaceAll(b, s, []byte(redacted))
	}
	secrets.Unlock()
	return userinfo.ReplaceAll(b, []byte("${1}"+redacted+"@"))
}

// userInfo returns the user info of the URL raw ("scheme://user:password@
// host..."): whatever stands between "://" and the last '@'. That is
// wider than what Go's parser takes when a password has a '/', '?' or '#'
// (see userInfoIsAuthority), and so never narrower than the secret.
func userInfo(raw string) (string, bool) {
	_, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return "", false
	}
	i := strings.LastIndex(rest, "@")
	if i < 0 {
		return "", false
	}
	return rest[:i], true
}

// userInfoIsAuthority reports whether Go's URL parser reads raw's user info
// (userInfo) as user info: it ends the authority at the first '/', '?' or
// '#', and takes the user info from the authority alone.
func userInfoIsAuthority(raw string) bool {
	info, _ := userInfo(raw)
	return !strings.ContainsAny(info, "/?#")
}

// redactURL returns raw with its user info (userInfo) replaced by ***,
// built from the pieces around it rather than by rewriting the text.
func redactURL(raw string) string {
	info, ok := userInfo(raw)
	if !ok {
		return raw
	}
	scheme, rest, _ := strings.Cut(raw, "://")
	return scheme + "://" + redacted + "@" + rest[len(info)+1:]
}

// redactString is redact for strings.
func redactString(s string) string { return string(redact([]byte(s))) }

// redactor redacts every Write. Each fmt.Fprint*, tabwriter cell and JSON
// document arrives in one Write, so a URL is never split across two.
type redactor struct{ w io.Writer }

func (r redactor) Write(p []byte) (int, error) {
	if _, err := r.w.Write(redact(p)); err != nil {
		return 0, err
	}
	return len(p), nil
}
