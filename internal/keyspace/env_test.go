package keyspace

import (
	"context"
	"fmt"
	"os"
	"sort"
	"strings"
	"testing"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/require"
	"go.uber.org/goleak"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/redistest"
)

// addr is the package's one redis-server (fuzz workers, being processes,
// each start their own).
var addr string

func TestMain(m *testing.M) {
	s, err := redistest.StartMain()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	addr = s.Addr()
	code := m.Run()
	s.Kill()
	if code == 0 {
		if err := goleak.Find(); err != nil {
			fmt.Fprintln(os.Stderr, "goleak:", err)
			code = 1
		}
	}
	os.Exit(code)
}

// env is one test's view of the shared server: a raw client for setting up
// and checking, and a redisync Client. The database is emptied first.
type env struct {
	rc rueidis.Client
	c  *redisync.Client
}

func bg() context.Context { return context.Background() }

func dial(tb testing.TB) rueidis.Client {
	tb.Helper()
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, DisableCache: true, ForceSingleClient: true})
	if err != nil {
		tb.Fatalf("connect to %s: %v", addr, err)
	}
	tb.Cleanup(rc.Close)
	return rc
}

func newEnv(tb testing.TB) *env {
	tb.Helper()
	rc := dial(tb)
	c := redisync.New(rc)
	tb.Cleanup(func() {
		c.Close()
		rc.Close()
	})
	e := &env{rc: rc, c: c}
	e.do(tb, "FLUSHALL")
	return e
}

func (e *env) do(tb testing.TB, args ...string) rueidis.RedisResult {
	tb.Helper()
	res := e.rc.Do(bg(), e.rc.B().Arbitrary(args...).Build())
	if err := res.Error(); err != nil {
		if _, reply := rueidis.IsRedisErr(err); !reply && !rueidis.IsRedisNil(err) {
			tb.Fatalf("%v: %v", args, err)
		}
	}
	return res
}

// keyState is what a key holds, exactly: its serialized value and its
// absolute expiry (ms since the epoch; -1 none, -2 no key), so "unchanged"
// does not depend on when it is read.
type keyState struct {
	Dump     string
	ExpireAt int64
}

func (e *env) state(tb testing.TB, key string) keyState {
	tb.Helper()
	dump, err := e.do(tb, "DUMP", key).ToString()
	if err != nil && !rueidis.IsRedisNil(err) {
		tb.Fatalf("DUMP %q: %v", key, err)
	}
	at, err := e.do(tb, "PEXPIRETIME", key).AsInt64()
	if err != nil {
		tb.Fatalf("PEXPIRETIME %q: %v", key, err)
	}
	return keyState{Dump: dump, ExpireAt: at}
}

func (s keyState) String() string { return fmt.Sprintf("{dump %q expires at %d}", s.Dump, s.ExpireAt) }

// snapshot is every key's state.
func (e *env) snapshot(tb testing.TB) map[string]keyState {
	tb.Helper()
	keys, err := e.do(tb, "KEYS", "*").AsStrSlice()
	if err != nil {
		tb.Fatal(err)
	}
	out := make(map[string]keyState, len(keys))
	for _, k := range keys {
		out[k] = e.state(tb, k)
	}
	return out
}

// diff describes how two snapshots differ ("" when equal).
func diff(before, after map[string]keyState) string {
	var out []string
	for k, b := range before {
		a, ok := after[k]
		switch {
		case !ok:
			out = append(out, fmt.Sprintf("%q deleted", k))
		case a.Dump != b.Dump:
			out = append(out, fmt.Sprintf("%q changed", k))
		case a.ExpireAt != b.ExpireAt:
			out = append(out, fmt.Sprintf("%q expiry %d -> %d", k, b.ExpireAt, a.ExpireAt))
		}
	}
	for k := range after {
		if _, ok := before[k]; !ok {
			out = append(out, fmt.Sprintf("%q created", k))
		}
	}
	sort.Strings(out)
	return strings.Join(out, "; ")
}

// describe lists every key with its type and PTTL, for failure messages.
func (e *env) describe(tb testing.TB) string {
	tb.Helper()
	keys, _ := e.do(tb, "KEYS", "*").AsStrSlice()
	sort.Strings(keys)
	var b strings.Builder
	for _, k := range keys {
		typ, _ := e.do(tb, "TYPE", k).ToString()
		pttl, _ := e.do(tb, "PTTL", k).AsInt64()
		fmt.Fprintf(&b, "\n  %q %s pttl=%d", k, typ, pttl)
	}
	return b.String()
}

// userClient is a Client over a connection of its own as user, whom the ACL
// gives rules after "reset on >pw"; the Client, its connection and the user
// go at the test's end.
func (e *env) userClient(tb testing.TB, user string, rules []string, opts ...redisync.Option) *redisync.Client {
	tb.Helper()
	e.do(tb, append([]string{"ACL", "SETUSER", user, "reset", "on", ">pw"}, rules...)...)
	tb.Cleanup(func() { e.do(tb, "ACL", "DELUSER", user) })
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, Username: user, Password: "pw",
		DisableCache: true, ForceSingleClient: true})
	require.NoError(tb, err)
	cl := redisync.New(rc, opts...)
	tb.Cleanup(func() { cl.Close(); rc.Close() })
	return cl
}
