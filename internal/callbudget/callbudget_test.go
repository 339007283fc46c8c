package callbudget_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"go.uber.org/goleak"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/fairlock"
	"github.com/redisync/redisync/internal/callbudget"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/multilock"
	"github.com/redisync/redisync/rlock"
	"github.com/redisync/redisync/rwlock"
	"github.com/redisync/redisync/semaphore"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// primitives are the lockers measured, by the name the budget table uses.
var primitives = map[string]func(c *redisync.Client, name string) redisync.Locker{
	"rlock":       func(c *redisync.Client, name string) redisync.Locker { return rlock.New(c, name) },
	"fairlock":    func(c *redisync.Client, name string) redisync.Locker { return fairlock.New(c, name) },
	"rwlock read": func(c *redisync.Client, name string) redisync.Locker { return rwlock.New(c, name).ReadLocker() },
	"rwlock write": func(c *redisync.Client, name string) redisync.Locker {
		return rwlock.New(c, name).WriteLocker()
	},
	"semaphore(1)": func(c *redisync.Client, name string) redisync.Locker { return semaphore.New(c, name, 1).Locker(1) },
	"multilock of 2 rlocks": func(c *redisync.Client, name string) redisync.Locker {
		return multilock.New(rlock.New(c, "{"+name+"}:a"), rlock.New(c, "{"+name+"}:b"))
	},
}

// renewLease is the watchdog timeout of the renewal measurement.
const renewLease = 1500 * time.Millisecond

// ops are the operations each primitive is measured for.
var ops = []string{"acquire", "release", "renewal"}

// notCounted are the commands the test itself sends, and the client's
// connection setup.
var notCounted = map[string]bool{"info": true, "config|resetstat": true, "ping": true, "hello": true}

// scriptCommands run a script; the commands they run are counted as calls.
var scriptCommands = map[string]bool{"evalsha": true, "eval": true, "evalsha_ro": true, "eval_ro": true, "fcall": true, "fcall_ro": true}

// usage is what one operation made the server do.
type usage struct {
	scripts, calls int64
	by             map[string]int64 // calls by command
}

func (u usage) String() string {
	cmds := make([]string, 0, len(u.by))
	for cmd := range u.by {
		cmds = append(cmds, cmd)
	}
	slices.Sort(cmds)
	parts := make([]string, len(cmds))
	for i, cmd := range cmds {
		parts[i] = fmt.Sprintf("%s %d", strings.ToUpper(cmd), u.by[cmd])
	}
	return fmt.Sprintf("%d calls in %d scripts (%s)", u.calls, u.scripts, strings.Join(parts, ", "))
}

// meter reads and resets a server's command statistics.
type meter struct {
	t  *testing.T
	rc rueidis.Client
}

func (m meter) reset() { redistest.Do(m.t, m.rc, "CONFIG", "RESETSTAT") }

func (m meter) read() usage {
	info, err := redistest.Do(m.t, m.rc, "INFO", "commandstats").ToString()
	if err != nil {
		m.t.Fatalf("INFO commandstats: %v", err)
	}
	u := usage{by: map[string]int64{}}
	for cmd, n := range redistest.CommandStats(info) {
		switch {
		case notCounted[cmd] || strings.HasPrefix(cmd, "client|"):
		case scriptCommands[cmd]:
			u.scripts += n
		default:
			u.calls += n
			u.by[cmd] = n
		}
	}
	return u
}

// per divides a usage of n operations into the usage of one (n > 0).
func (u usage) per(n int64) usage {
	out := usage{scripts: u.scripts / n, calls: u.calls / n, by: map[string]int64{}}
	for cmd, c := range u.by {
		out.by[cmd] = c / n
	}
	return out
}

// measure counts, on a server of its own, what newLocker's acquire and
// release of a free name cost, and one renewal of its hold.
func measure(t *testing.T, newLocker func(c *redisync.Client, name string) redisync.Locker) map[string]usage {
	srv := redistest.Start(t)
	m := meter{t: t, rc: srv.Client(t)}
	ctx := context.Background()
	out := map[string]usage{}

	// Acquire and release with the default watchdog timeout (30 s): no
	// renewal runs meanwhile. The warm-up pair loads the scripts, so that
	// the measured pair runs them with EVALSHA, as every later one does.
	c := redisync.New(srv.Client(t))
	defer c.Close()
	warm := newLocker(c, "callbudget:warm")
	if err := warm.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	if err := warm.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	l := newLocker(c, "callbudget:measured")
	m.reset()
	if err := l.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	out["acquire"] = m.read()
	m.reset()
	if err := l.Unlock(ctx); err != nil {
		t.Fatal(err)
	}
	out["release"] = m.read()

	// One renewal: a Client whose watchdog renews every 500 ms (a lease of
	// 1.5 s: a loaded machine's stalls do not lose it) holds one lock;
	// after its first two renewals (the steady state) the counters are
	// reset, and read after the next, twice: the cheaper of the two
	// counts (a semaphore's renewal raises its keys' expiry once in twelve,
	// never in two renewals running). Each renewal of the one hold is one
	// script call, so the calls per renewal are the calls per script.
	var mu sync.Mutex
	renewals := 0
	renewed := make(chan struct{}, 1)
	obs := redisync.ObserverFunc(func(ev redisync.Event) {
		if ev.Kind != redisync.EventRenewed {
			return
		}
		mu.Lock()
		renewals++
		mu.Unlock()
		select {
		case renewed <- struct{}{}:
		default:
		}
	})
	rc := redisync.New(srv.Client(t), redisync.WithWatchdogTimeout(renewLease), redisync.WithObserver(obs))
	defer rc.Close()
	h := newLocker(rc, "callbudget:renewed")
	if err := h.Lock(ctx); err != nil {
		t.Fatal(err)
	}
	defer h.Unlock(ctx)
	wait := func(n int) {
		deadline := time.After(10 * time.Second)
		for {
			mu.Lock()
			done := renewals >= n
			mu.Unlock()
			if done {
				return
			}
			select {
			case <-renewed:
			case <-deadline:
				t.Fatalf("no renewal %d within 10 s (%d so far)", n, renewals)
			}
		}
	}
	wait(2)
	for range 2 {
		m.reset()
		mu.Lock()
		next := renewals + 1
		mu.Unlock()
		wait(next)
		u := m.read()
		if u.scripts == 0 {
			t.Fatalf("a renewal was observed but no script ran: %v", u)
		}
		if r, ok := out["renewal"]; !ok || u.per(u.scripts).calls < r.calls {
			out["renewal"] = u.per(u.scripts)
		}
	}
	if h.Err() != nil {
		t.Fatalf("the renewed hold was lost: %v", h.Err())
	}
	return out
}

// TestCallBudget counts the Redis calls of every primitive's acquire,
// release and renewal on the common path and fails when one exceeds its
// row in docs/benchmarks.md's "Call budget" table.
func TestCallBudget(t *testing.T) {
	f, err := os.Open("../../docs/benchmarks.md")
	if err != nil {
		t.Fatal(err)
	}
	budgets, err := callbudget.Parse(f)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	rows := map[string]callbudget.Budget{}
	for _, b := range budgets {
		if _, ok := primitives[b.Primitive]; !ok && !deciders[b.Primitive] {
			t.Errorf("docs/benchmarks.md budgets %q, which the test does not measure", b.Primitive)
		}
		if !slices.Contains(ops, b.Op) {
			t.Errorf("docs/benchmarks.md budgets %s %q, which is no operation (want one of %v)", b.Primitive, b.Op, ops)
		}
		rows[b.Primitive+"/"+b.Op] = b
	}
	for name, newLocker := range primitives {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			got := measure(t, newLocker)
			for _, op := range ops {
				b, ok := rows[name+"/"+op]
				if !ok {
					t.Errorf("%s %s: no budget in docs/benchmarks.md (measured %v)", name, op, got[op])
					continue
				}
				u := got[op]
				switch {
				case u.calls > b.Calls || u.scripts > b.Scripts:
					t.Errorf("%s %s: %v, over its budget of %d calls in %d scripts (docs/benchmarks.md, Call budget)",
						name, op, u, b.Calls, b.Scripts)
				case u.calls < b.Calls || u.scripts < b.Scripts:
					t.Logf("%s %s: %v, under its budget of %d calls in %d scripts: tighten the table", name, op, u, b.Calls, b.Scripts)
				default:
					t.Logf("%s %s: %v", name, op, u)
				}
			}
		})
	}
}
