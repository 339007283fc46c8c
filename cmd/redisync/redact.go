package main

import (
	"bytes"
	"io"
	"net/url"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
)

// Every message the command writes to its own stdout and stderr goes through
// a redactor (see run in main.go), so no message or log line can carry a
// credential, whatever path the error took: one rule, applied once at the
// edge, instead of care at every fmt call. inspect's report (table and JSON)
// is data, not a message: its values are redacted one by one
// (redactSecrets) and it goes out past the redactor (reportWriter). The
// wrapped command's output does not pass through it: it is written to the
// inherited descriptors.

// redacted replaces every secret.
const redacted = "***"

// userinfo matches the user info of a URL in free text ("scheme://user:
// password@"): everything from "://" to the last '@' of the URL's token (a
// run of text without whitespace), since a password may hold '@', '/', '?',
// '#' or quotes, and what such a password leaves after its first '@' is as
// secret as what stands before it. The user info's first character is no
// '/' (a unix:// URL's empty authority: its path may hold an '@'), quote or
// '[' (the "[user:password@]" of a synopsis). Where a URL's query or path
// has an '@', more than the user info goes: the message loses a host, the
// password stays out.
var userinfo = regexp.MustCompile(`([A-Za-z][A-Za-z0-9+.\-]*://)[^/\s"'<>\[\]][^\s]*@`)

// minSecretLen is the shortest literal secret replaced wherever it occurs: a
// one- or two-letter password would black out ordinary words.
const minSecretLen = 3

// secrets are the passwords this run was given (flag, file, environment, URL,
// a URL among the arguments), longest first, replaced verbatim wherever they
// occur — also where a malformed URL kept the user info from being
// recognised.
var secrets struct {
	sync.Mutex
	vals [][]byte
}

// addSecret registers s to be redacted from every output, also in the
// spellings the command's messages give text (printable's and
// controlsShown's escapes, Go's quoting), which a verbatim search for s
// would not find.
func addSecret(s string) {
	if len(s) < minSecretLen {
		return
	}
	secrets.Lock()
	defer secrets.Unlock()
	q := strconv.Quote(s)
	for _, v := range []string{s, printable(s), controlsShown(s), q[1 : len(q)-1]} {
		if !slices.ContainsFunc(secrets.vals, func(b []byte) bool { return string(b) == v }) {
			secrets.vals = append(secrets.vals, []byte(v))
		}
	}
	// Longest first: a shorter secret inside a longer one ("%zz" in
	// "%zzSecretWord") replaced first would leave the rest of the longer.
	slices.SortStableFunc(secrets.vals, func(a, b []byte) int { return len(b) - len(a) })
}

// addURLSecrets registers the password of every URL among args: a URL
// given where a NAME, a subcommand or a command belongs (a slip in a
// script: `redisync "$REDIS_URL" inspect x`) is printed back in messages
// and in inspect's report, and its password must not be.
func addURLSecrets(args []string) {
	for _, a := range args {
		i := strings.Index(a, "://")
		if i < 0 {
			continue
		}
		// The URL begins at its scheme, after whatever stands before it
		// in the argument ("--redis=redis://...").
		j := strings.LastIndexFunc(a[:i], func(r rune) bool {
			return !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '+' || r == '.' || r == '-')
		})
		addURLSecret(a[j+1:])
	}
}

// addURLSecret registers the password in the user info of raw, as given
// and percent-decoded.
func addURLSecret(raw string) {
	info, ok := userInfo(raw)
	if !ok {
		return
	}
	if _, inQuery := queryAt(raw); inQuery {
		return
	}
	_, pw, _ := strings.Cut(info, ":")
	addSecret(pw)
	if dec, err := url.PathUnescape(pw); err == nil {
		addSecret(dec)
	}
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
// (see userInfoIsAuthority), and so never narrower than the secret. A
// unix:// URL's user info ends before its path, which begins with '/': a
// URL with an empty authority ("unix:///run/redis@main.sock") has none.
func userInfo(raw string) (string, bool) {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return "", false
	}
	i := strings.LastIndex(rest, "@")
	if strings.EqualFold(scheme, "unix") {
		i = strings.LastIndex(rest, "@/")
	}
	if i < 0 || strings.EqualFold(scheme, "unix") && strings.HasPrefix(rest, "/") {
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

// urlOptions are the query options rueidis.ParseURL reads.
var urlOptions = []string{"addr", "client_cache", "client_name", "db", "dial_timeout", "master_set", "max_retries", "protocol", "skip_verify", "write_timeout"}

// queryAt reports whether every '@' of raw stands in its query and the URL
// reads as one without user info: its host and port, an optional
// database, and a query of rueidis's options only
// ("redis://host:6379/0?client_name=cron@web1"). Read the other way, the
// password would hold "?client_name=", which no password does. It
// returns raw with those '@' written %40, as the URL must give them.
func queryAt(raw string) (string, bool) {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return "", false
	}
	beforeQuery, query, ok := strings.Cut(rest, "?")
	if !ok || !strings.Contains(query, "@") || strings.ContainsAny(beforeQuery, "@#") {
		return "", false
	}
	if _, db, hasPath := strings.Cut(beforeQuery, "/"); hasPath && db != "" && strings.Trim(db, "0123456789") != "" {
		return "", false
	}
	query, _, _ = strings.Cut(query, "#")
	for _, kv := range strings.Split(query, "&") {
		k, _, _ := strings.Cut(kv, "=")
		if !slices.Contains(urlOptions, k) {
			return "", false
		}
	}
	return scheme + "://" + beforeQuery + "?" + strings.ReplaceAll(rest[len(beforeQuery)+1:], "@", "%40"), true
}

// redactString is redact for strings.
func redactString(s string) string { return string(redact([]byte(s))) }

// redactSecrets replaces the registered secrets in s, and nothing else. It
// is for the values of a report (inspect's table and JSON): names, owner
// ids and labels are data, from Redis or the command line, not the
// command's own secrets, so the user-info pattern does not run over them (a
// lock named "rsync://backup@db1" is shown as it is), and the replacement
// runs value by value, never over the document, where a password that is a
// piece of its syntax (`": "`, "kind") would break it.
func redactSecrets(s string) string {
	secrets.Lock()
	defer secrets.Unlock()
	for _, v := range secrets.vals {
		s = strings.ReplaceAll(s, string(v), redacted)
	}
	return s
}

// redactor redacts every Write. Each fmt.Fprint*, tabwriter cell and JSON
// document arrives in one Write, so a URL is never split across two.
type redactor struct{ w io.Writer }

func (r redactor) Write(p []byte) (int, error) {
	if _, err := r.w.Write(redact(p)); err != nil {
		return 0, err
	}
	return len(p), nil
}

// reportWriter returns the writer under w's redactor, for a report whose
// values went through redactSecrets (w itself when it redacts nothing).
func reportWriter(w io.Writer) io.Writer {
	if r, ok := w.(redactor); ok {
		return r.w
	}
	return w
}
