package doccheck

import (
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/fairlock"
)

// A claim is a sentence of a document that states a number the code
// decides: each {} in text is a duration ("10 s", "5 min 30 s"), and must
// read as the matching value. The sentence itself must be there, so an edit
// that drops or rewords it comes back here to say what it states now.
type claim struct {
	file   string // from the repository's root
	text   string // whitespace and Go comment markers do not matter
	values []time.Duration
}

// A rule is code a document's prose describes, which must still read so:
// when it changes, so must the prose (named in why).
type rule struct {
	file, code, why string
}

func claims(t *testing.T) []claim {
	keep := time.Duration(luaConst(t, "internal/scripts/lib.lua", "KEEP_TOKEN_MS")) * time.Millisecond
	// A dead waiter in Redisson's queue holds it up to its deadline: the
	// lease the lock had left when it joined (up to the watchdog's lease)
	// plus the thread wait time (see queueRule).
	deadWaiter := fairlock.DefaultRedissonWait + redisync.DefaultWatchdogTimeout
	return []claim{
		{"rlock/doc.go", "the last token, kept {} after a release", []time.Duration{keep}},
		{"docs/layout.md", "| the last token of rlock, fairlock and rwlock on N | {},", []time.Duration{keep}},
		{"docs/how-it-works.md", "until the server clock is {} past it (and {} past the release)", []time.Duration{keep, keep}},
		{"fairlock/options.go", "Redisson's default and the watchdog's lease, {}", []time.Duration{deadWaiter}},
		{"fairlock/options.go", "a d below MinWaiterTimeout ({}) is raised to it", []time.Duration{fairlock.MinWaiterTimeout}},
		{"fairlock/options.go", "Default: DefaultWaiterTimeout ({})", []time.Duration{fairlock.DefaultWaiterTimeout}},
		{"docs/redisson.md", "with the defaults ({} wait, a watchdog lease of {}) up to {}", []time.Duration{fairlock.DefaultRedissonWait, redisync.DefaultWatchdogTimeout, deadWaiter}},
		{"docs/redisson.md", "a dead waiter costs at most the waiter timeout, {}", []time.Duration{fairlock.DefaultWaiterTimeout}},
	}
}

var queueRule = rule{
	"internal/scripts/fair_redisson_acquire.lua",
	"local base = redis.call('pttl', KEYS[1])",
	"a waiter joining Redisson's queue behind the holder gets the deadline now + the lock's PTTL + wait: fairlock's WithRedissonQueue, its package doc and docs/redisson.md state the dead-waiter bound from it",
}

var rules = []rule{
	queueRule,
	{"internal/scripts/fair_redisson_acquire.lua", "base + wait + now", queueRule.why},
}

// Every number a document states for the code is the code's.
func TestDocsStateTheCodesNumbers(t *testing.T) {
	for _, c := range claims(t) {
		doc := readNormalized(t, c.file)
		pattern := regexp.QuoteMeta(normalize(c.text))
		pattern = strings.ReplaceAll(pattern, `\{\}`, durationPhrase)
		m := regexp.MustCompile(pattern).FindStringSubmatch(doc)
		if m == nil {
			t.Errorf("%s no longer says %q: say the number again (and update this claim)", c.file, c.text)
			continue
		}
		for i, want := range c.values {
			got, err := parseDuration(m[i+1])
			if err != nil {
				t.Errorf("%s: %q: %v", c.file, m[0], err)
				continue
			}
			if got != want {
				t.Errorf("%s says %q: %s, but the code's value is %s", c.file, m[0], m[i+1], want)
			}
		}
	}
	for _, r := range rules {
		if !strings.Contains(readNormalized(t, r.file), normalize(r.code)) {
			t.Errorf("%s no longer has %q: %s — check that prose and update this rule", r.file, r.code, r.why)
		}
	}
}

// Default handles are not reentrant (a second Lock on one handle waits):
// the docs call a lock reentrant only as something asked for.
func TestDocsCallReentrantOnlyWhatIsAskedFor(t *testing.T) {
	word := regexp.MustCompile(`(?i)(?:^|[^A-Za-z_])(re-?entrant)( on request| handles)?(?:[^A-Za-z_]|$)`)
	files := []string{"README.md", "doc.go"}
	for _, glob := range []string{"docs/*.md", "*/doc.go"} {
		m, err := filepath.Glob(filepath.Join(root, glob))
		if err != nil {
			t.Fatal(err)
		}
		for _, f := range m {
			rel, _ := filepath.Rel(root, f)
			files = append(files, rel)
		}
	}
	for _, f := range files {
		for _, m := range word.FindAllStringSubmatch(readNormalized(t, f), -1) {
			if m[2] == "" {
				t.Errorf("%s: %q: a default handle is not reentrant; say \"reentrant on request\" (WithReentrant, WithOwner)", f, strings.TrimSpace(m[0]))
			}
		}
	}
}

// durationPhrase matches a duration as the docs write it ("10 s", "500 ms",
// "5 minutes", "5 min 30 s").
const durationPhrase = `(\d+(?:\.\d+)? ?(?:ms|minutes|minute|min|s|h)(?: \d+(?:\.\d+)? ?(?:ms|minutes|minute|min|s|h))*)\b`

// root is the repository's root.
var root = filepath.Join("..", "..")

func readNormalized(t *testing.T, file string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, file))
	if err != nil {
		t.Fatal(err)
	}
	return normalize(string(b))
}

var goComment = regexp.MustCompile(`(?m)^\s*//\s?`)

// normalize drops Go comment markers and collapses whitespace, so a
// sentence matches however it is wrapped.
func normalize(s string) string {
	return strings.Join(strings.Fields(goComment.ReplaceAllString(s, " ")), " ")
}

// parseDuration reads "10 s", "500 ms", "5 minutes", "5 min 30 s".
func parseDuration(s string) (time.Duration, error) {
	s = strings.NewReplacer("minutes", "m", "minute", "m", "min", "m", " ", "").Replace(strings.TrimSpace(s))
	return time.ParseDuration(s)
}

// luaConst returns the integer a script assigns with "local NAME = n".
func luaConst(t *testing.T, file, name string) int64 {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(root, file))
	if err != nil {
		t.Fatal(err)
	}
	m := regexp.MustCompile(`(?m)^local ` + name + ` = (\d+)\s*$`).FindStringSubmatch(string(b))
	if m == nil {
		t.Fatalf("%s has no %s", file, name)
	}
	n, err := strconv.ParseInt(m[1], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
