//go:build interop

package interop

import (
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"go.uber.org/goleak"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/redistest"
)

// One redis-server and one process per foreign client serve the whole
// package (a JVM takes seconds to start); each test uses names of its own.
var (
	srv   *redistest.Server
	java  *peer // Redisson
	node  *peer // node-redisson
	peers []*peer
)

// maxPoll is the Go waiters' longest sleep between attempts: far above
// wakeWithin, so only a release message explains a prompt grant.
const maxPoll = 30 * time.Second

// wakeWithin is how soon a waiter must be granted after a release in another
// library (generous: the machine may be loaded; the poll would take 30 s).
const wakeWithin = 5 * time.Second

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	var err error
	if srv, err = redistest.StartMain(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	// Everything started is stopped before the leak check, in reverse order.
	var stops []func()
	stop := func() {
		for i := len(stops) - 1; i >= 0; i-- {
			stops[i]()
		}
		stops = nil
	}
	defer stop()
	stops = append(stops, srv.Close)
	cmd, err := javaCommand(srv.Addr())
	if err == nil {
		java, err = startPeer("redisson", cmd)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	stops = append(stops, java.stop)
	_, port, _ := strings.Cut(srv.Addr(), ":")
	if cmd, err = nodeCommand(port); err == nil {
		node, err = startPeer("node-redisson", cmd)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	stops = append(stops, node.stop)
	peers = []*peer{java, node}
	code := m.Run()
	stop()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
	}
	return code
}

// goClient returns a redisync Client on the shared server whose waiters
// poll at most every maxPoll.
func goClient(t *testing.T) *redisync.Client {
	c := redisync.New(srv.Client(t), redisync.WithMaxPoll(maxPoll))
	t.Cleanup(func() { c.Close() })
	return c
}

// names returns this test's lock names for the name shapes the suite
// covers: plain, a hash tag, and '{' without an effective tag ("a{b",
// "{}x"). Java's Redisson and node-redisson decide by different rules
// (contains '{' / starts with '{'), so "a{b" is left out for node-redisson
// (see docs/redisson.md).
func names(t *testing.T, p *peer) []string {
	s := strings.NewReplacer("/", ".", " ", ".").Replace(t.Name())
	out := []string{"x:" + s, "{t}x:" + s, "{}x:" + s}
	if p == java {
		out = append(out, "a{b:"+s)
	}
	return out
}

// channel returns the channel p's waiters on lock name listen on, by that
// client's own rule (Redisson: the name contains '{'; node-redisson: it
// starts with '{').
func channel(p *peer, prefix, name string) string {
	braced := strings.Contains(name, "{")
	if p == node {
		braced = strings.HasPrefix(name, "{")
	}
	if braced {
		return prefix + ":" + name
	}
	return prefix + ":{" + name + "}"
}

// awaitSubscribers waits until channel has n subscribers (a waiter in
// another process has subscribed and is waiting).
func awaitSubscribers(t *testing.T, ch string, n int64) {
	t.Helper()
	rc := srv.Client(t)
	deadline := time.Now().Add(answerTimeout)
	for {
		arr, err := redistest.Do(t, rc, "PUBSUB", "NUMSUB", ch).ToArray()
		if err == nil && len(arr) == 2 {
			if got, _ := arr[1].AsInt64(); got >= n {
				return
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("interop: no %d subscribers on %s within %v", n, ch, answerTimeout)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// assertGone fails unless no key of names is left that would stay: the lock
// hash itself, or any key containing a name without an expiry. (Keys with an
// expiry, such as a kept last token or holder metadata, vanish on their own.)
func assertGone(t *testing.T, names ...string) {
	t.Helper()
	rc := srv.Client(t)
	deadline := time.Now().Add(3 * time.Second)
	for {
		all, err := redistest.Do(t, rc, "KEYS", "*").AsStrSlice()
		if err != nil {
			t.Fatal(err)
		}
		var left []string
		for _, k := range all {
			for _, n := range names {
				if !strings.Contains(k, n) {
					continue
				}
				if ttl, _ := redistest.Do(t, rc, "PTTL", k).AsInt64(); k == n || ttl == -1 {
					left = append(left, k)
					break
				}
			}
		}
		if len(left) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("interop: keys left behind: %q", left)
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// tid returns a fresh "thread id" for a foreign owner.
var tidSeq int

func tid() string { tidSeq++; return strconv.Itoa(1000 + tidSeq) }

// describe lists the keys of name with their contents, for failure messages.
func describe(t *testing.T, name string) string {
	rc := srv.Client(t)
	all, _ := redistest.Do(t, rc, "KEYS", "*").AsStrSlice()
	var b strings.Builder
	for _, k := range all {
		if !strings.Contains(k, name) {
			continue
		}
		typ, _ := redistest.Do(t, rc, "TYPE", k).ToString()
		ttl, _ := redistest.Do(t, rc, "PTTL", k).AsInt64()
		fmt.Fprintf(&b, "[%s %s pttl=%d", k, typ, ttl)
		if typ == "hash" {
			m, _ := redistest.Do(t, rc, "HGETALL", k).AsStrMap()
			fmt.Fprintf(&b, " %v", m)
		}
		b.WriteString("] ")
	}
	return b.String()
}
