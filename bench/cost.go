package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/rueidis"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/fairlock"
	"github.com/redisync/redisync/internal/keys"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/ratelimit"
	"github.com/redisync/redisync/rlock"
	"github.com/redisync/redisync/rwlock"
	"github.com/redisync/redisync/semaphore"
)

// The cost scenario (-cost, make cost): the server cost of one operation,
// counted in redis-server instructions under callgrind — a count that
// repeats whatever the load on the machine. A pair's cost is the
// difference of two runs of different lengths on servers of their own, so
// that what every run pays once (start-up, connections, script loading,
// shut-down) cancels; pairs run one at a time (one command per read on the
// server), on distinct free names. A renewal's cost is counted inside one
// run (watchdogRow), where the watchdog's timing decides how many holds it
// renews. Beside each, from INFO commandstats on a plain server of its
// own: the script calls and the Redis calls inside them per operation, and
// the server µs per script call (a time: noise on a loaded machine, unlike
// the instructions).

// costPairs are the pair runs' lengths: a difference of 800 pairs repeats
// to within about 1% from run to run (hash seeds differ).
var costPairs = [2]int{200, 1000}

// costCase is one kind of acquire+release.
type costCase struct {
	name string
	// open returns acquire, which takes the i-th free name and returns its
	// release, and a cleanup.
	open func(rc rueidis.Client) (acquire func(ctx context.Context, i int) (func(context.Context) error, error), cleanup func())
}

func costName(i int) string { return "cost:" + strconv.Itoa(i) }

func redisyncCost(name string, mk func(c *redisync.Client, name string) locker) costCase {
	return costCase{name: name, open: func(rc rueidis.Client) (func(context.Context, int) (func(context.Context) error, error), func()) {
		c := redisync.New(rc)
		return func(ctx context.Context, i int) (func(context.Context) error, error) {
			l := mk(c, costName(i))
			return l.Unlock, l.Lock(ctx)
		}, func() { c.Close() }
	}}
}

// rateCost is two decisions of the rate limiter on a fresh identity (1
// event an hour, burst 1): the first admits (GET, TIME, SET: the key's
// first decision), the second is denied (GET, PTTL, TIME) — the
// "acquire" and "release" halves of the pair.
func rateCost() costCase {
	return costCase{name: "ratelimit Allow+Allow (admitted, denied)", open: func(rc rueidis.Client) (func(context.Context, int) (func(context.Context) error, error), func()) {
		c := redisync.New(rc)
		l := ratelimit.New(c, "cost", ratelimit.Every(time.Hour), 1)
		return func(ctx context.Context, i int) (func(context.Context) error, error) {
			key := strconv.Itoa(i)
			_, err := l.Allow(ctx, key)
			return func(ctx context.Context) error { _, err := l.Allow(ctx, key); return err }, err
		}, func() { c.Close() }
	}}
}

// bareCost is a reference pair split into its acquire and release.
func bareCost(name string, lock func(context.Context, rueidis.Client, bareNames, string) (func(context.Context) error, error)) costCase {
	return costCase{name: name, open: func(rc rueidis.Client) (func(context.Context, int) (func(context.Context) error, error), func()) {
		return func(ctx context.Context, i int) (func(context.Context) error, error) {
			return lock(ctx, rc, bareKeys(costName(i)), "owner:cost")
		}, func() {}
	}}
}

func costCases() []costCase {
	return []costCase{
		redisyncCost("rlock", func(c *redisync.Client, k string) locker { return rlock.New(c, k) }),
		redisyncCost("fairlock", func(c *redisync.Client, k string) locker { return fairlock.New(c, k) }),
		redisyncCost("rwlock read", func(c *redisync.Client, k string) locker { return rwlock.New(c, k).ReadLocker() }),
		redisyncCost("rwlock write", func(c *redisync.Client, k string) locker { return rwlock.New(c, k).WriteLocker() }),
		redisyncCost("semaphore(1)", func(c *redisync.Client, k string) locker { return &permitLocker{s: semaphore.New(c, k, 1)} }),
		rateCost(),
		bareCost("(a) bare Redisson pair", func(ctx context.Context, rc rueidis.Client, k bareNames, owner string) (func(context.Context) error, error) {
			return func(ctx context.Context) error { return bareUnlock(ctx, rc, k, owner) }, bareLock(ctx, rc, k, owner)
		}),
		bareCost("(b) minimal fencing pair", func(ctx context.Context, rc rueidis.Client, k bareNames, owner string) (func(context.Context) error, error) {
			token, err := fencedLock(ctx, rc, k, owner)
			return func(ctx context.Context) error { return fencedUnlock(ctx, rc, k, owner, token) }, err
		}),
		bareCost("(c) SET NX PX + DEL", func(ctx context.Context, rc rueidis.Client, k bareNames, owner string) (func(context.Context) error, error) {
			return func(ctx context.Context) error { return nativeUnlock(ctx, rc, k) }, nativeLock(ctx, rc, k, owner)
		}),
		bareCost("(e) bare Redisson rwlock read pair", func(ctx context.Context, rc rueidis.Client, k bareNames, owner string) (func(context.Context) error, error) {
			rw := rwKeys(k.lock)
			return func(ctx context.Context) error { return bareReadUnlock(ctx, rc, rw, owner) }, bareReadLock(ctx, rc, rw, owner)
		}),
		bareCost("(f) bare Redisson rwlock write pair", func(ctx context.Context, rc rueidis.Client, k bareNames, owner string) (func(context.Context) error, error) {
			rw := rwKeys(k.lock)
			return func(ctx context.Context) error { return bareWriteUnlock(ctx, rc, rw, owner) }, bareWriteLock(ctx, rc, rw, owner)
		}),
	}
}

// The renewal runs: costHolds holds with a lease of costLease, renewed for
// costRounds[0] or costRounds[1] rounds.
const (
	costHolds = 500
	costLease = 6 * time.Second // the watchdog renews every 2 s
)

// costRounds is how many renewal intervals the watchdog's window lasts;
// costRenewalRuns the rounds of the bare renewal's two runs.
const costRounds = 3

var costRenewalRuns = [2]int{1, 4}

// renewRun holds costHolds locks for rounds renewal rounds and returns how
// many hold renewals it made and in how many batches. It calls mark, when
// not nil, once every lock is held and again before the first release,
// with the counts so far.
type renewRun func(ctx context.Context, rc rueidis.Client, rounds int, mark func(renewed, batches int) error) (renewed, batches int, err error)

// renewalCase is a primitive whose holds the watchdog renews.
type renewalCase struct {
	name string
	mk   func(c *redisync.Client, name string) redisync.Locker
}

func renewalCases() []renewalCase {
	return []renewalCase{
		{"rlock", func(c *redisync.Client, k string) redisync.Locker { return rlock.New(c, k) }},
		{"rwlock read", func(c *redisync.Client, k string) redisync.Locker { return rwlock.New(c, k).ReadLocker() }},
		{"rwlock write", func(c *redisync.Client, k string) redisync.Locker { return rwlock.New(c, k).WriteLocker() }},
		{"semaphore(1)", func(c *redisync.Client, k string) redisync.Locker { return semaphore.New(c, k, 1).Locker(1) }},
	}
}

// watchdogRenewals holds rc's locks with the watchdog for rounds renewal
// intervals and counts the holds its batches renewed (EventRenewed).
func (rc renewalCase) watchdogRenewals(ctx context.Context, r rueidis.Client, rounds int, mark func(renewed, batches int) error) (int, int, error) {
	var mu sync.Mutex
	renewed, batches := 0, 0
	counts := func() (int, int) {
		mu.Lock()
		defer mu.Unlock()
		return renewed, batches
	}
	c := redisync.New(r, redisync.WithWatchdogTimeout(costLease), redisync.WithObserver(redisync.ObserverFunc(func(ev redisync.Event) {
		if ev.Kind == redisync.EventRenewed {
			mu.Lock()
			renewed += ev.Count
			batches++
			mu.Unlock()
		}
	})))
	defer c.Close()
	locks := make([]redisync.Locker, costHolds)
	for i := range locks {
		locks[i] = rc.mk(c, costName(i))
		if err := locks[i].Lock(ctx); err != nil {
			return 0, 0, err
		}
	}
	// The first batch loads the renewal script (EVALSHA, NOSCRIPT, EVAL),
	// and its holds' holder records follow it (each hold's record is
	// written once, with its first renewal: a cost of the hold, not of a
	// renewal, and refreshed only every RecordRefresh): the window starts
	// after both.
	for deadline := time.Now().Add(2 * costLease); ; time.Sleep(10 * time.Millisecond) {
		if _, b := counts(); b > 0 {
			break
		}
		if time.Now().After(deadline) {
			return 0, 0, errors.New("no renewal within two leases")
		}
	}
	if err := awaitRecords(ctx, r, costHolds); err != nil {
		return 0, 0, err
	}
	if err := callMark(mark, counts); err != nil {
		return 0, 0, err
	}
	// The window ends as the rounds-th batch after the first is reported,
	// not at a fixed time: a batch the server ran before a fixed end but
	// reported after it would be counted in the instructions and not in
	// the holds (the next batch is a renewal interval away).
	_, first := counts()
	for deadline := time.Now().Add(time.Duration(rounds+2) * costLease / 3); ; time.Sleep(time.Millisecond) {
		if _, b := counts(); b >= first+rounds {
			break
		}
		if time.Now().After(deadline) {
			return 0, 0, fmt.Errorf("%d renewal batches in %v, want %d", rounds, time.Duration(rounds+2)*costLease/3, rounds)
		}
	}
	if err := callMark(mark, counts); err != nil {
		return 0, 0, err
	}
	for _, l := range locks {
		if l.Err() != nil {
			return 0, 0, fmt.Errorf("a hold was lost (the server did not keep up): %w", l.Err())
		}
		if err := l.Unlock(ctx); err != nil {
			return 0, 0, err
		}
	}
	n, b := counts()
	return n, b, nil
}

// awaitRecords waits until the holder-info hashes of the first n cost
// names all exist: the first renewal batch's records are written.
func awaitRecords(ctx context.Context, rc rueidis.Client, n int) error {
	infos := make([]string, n)
	for i := range infos {
		infos[i], _ = keys.Derived(keys.HolderInfoPrefix, costName(i))
	}
	for deadline := time.Now().Add(2 * costLease); ; time.Sleep(10 * time.Millisecond) {
		got, err := rc.Do(ctx, rc.B().Exists().Key(infos...).Build()).AsInt64()
		if err != nil {
			return err
		}
		if got == int64(n) {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("the first renewal batch wrote %d of %d holder records within two leases", got, n)
		}
	}
}

func callMark(mark func(int, int) error, counts func() (int, int)) error {
	if mark == nil {
		return nil
	}
	return mark(counts())
}

// refRenewal is a reference renewal: how it takes a hold on a free name,
// and how it renews a batch of them.
type refRenewal struct {
	name  string
	lock  func(ctx context.Context, rc rueidis.Client, name, owner string) error
	renew func(ctx context.Context, rc rueidis.Client, locks, owners []string) error
}

// refRenewals are (d), Redisson's RLock renewal (and its write lock's),
// and (g), its read lock's.
var refRenewals = []refRenewal{
	{"(d) bare renewal", func(ctx context.Context, rc rueidis.Client, name, owner string) error {
		return bareLock(ctx, rc, bareKeys(name), owner)
	}, bareRenewBatch},
	{"(g) bare Redisson rwlock read renewal", func(ctx context.Context, rc rueidis.Client, name, owner string) error {
		return bareReadLock(ctx, rc, rwKeys(name), owner)
	}, bareReadRenewBatch},
}

// bareRenewals takes costHolds locks with ref's acquire and renews them
// rounds times with its renewal script, in batches of the size the
// watchdog's batches had (batch).
func bareRenewals(ref refRenewal, batch int) renewRun {
	return func(ctx context.Context, rc rueidis.Client, rounds int, mark func(renewed, batches int) error) (int, int, error) {
		locks := make([]string, costHolds)
		owners := make([]string, costHolds)
		for i := range locks {
			locks[i], owners[i] = costName(i), "owner:cost"
			if err := ref.lock(ctx, rc, locks[i], owners[i]); err != nil {
				return 0, 0, err
			}
		}
		if err := ref.renew(ctx, rc, locks[:1], owners[:1]); err != nil { // loads the script
			return 0, 0, err
		}
		renewed, batches := 0, 0
		counts := func() (int, int) { return renewed, batches }
		if err := callMark(mark, counts); err != nil {
			return 0, 0, err
		}
		for range rounds {
			for i := 0; i < len(locks); i += batch {
				j := min(i+batch, len(locks))
				if err := ref.renew(ctx, rc, locks[i:j], owners[i:j]); err != nil {
					return 0, 0, err
				}
				renewed += j - i
				batches++
			}
		}
		if err := callMark(mark, counts); err != nil {
			return 0, 0, err
		}
		return renewed, batches, nil
	}
}

// usage is what a phase made a plain server do (INFO commandstats).
type usage struct {
	scripts, calls int64   // script calls; Redis calls but the scripts
	scriptUs       float64 // server µs in scripts (or, with none, in the calls)
}

func readUsage(ctx context.Context, rc rueidis.Client) (usage, error) {
	info, err := rc.Do(ctx, rc.B().Info().Section("commandstats").Build()).ToString()
	if err != nil {
		return usage{}, err
	}
	var u usage
	var callsUs float64
	for _, line := range splitLines(info) {
		stat, ok := cut(line, "cmdstat_")
		if !ok {
			continue
		}
		name, rest, _ := strings.Cut(stat, ":")
		fields := map[string]float64{}
		for _, kv := range strings.Split(rest, ",") {
			k, v, _ := strings.Cut(kv, "=")
			fields[k], _ = strconv.ParseFloat(v, 64)
		}
		switch {
		case name == "info" || name == "config|resetstat" || name == "ping" || name == "hello" || strings.HasPrefix(name, "client|"):
		case strings.HasPrefix(name, "eval") || strings.HasPrefix(name, "fcall"):
			u.scripts += int64(fields["calls"])
			u.scriptUs += fields["usec"]
		default:
			u.calls += int64(fields["calls"])
			callsUs += fields["usec"]
		}
	}
	if u.scripts == 0 {
		u.scriptUs = callsUs
	}
	return u, nil
}

func resetStats(ctx context.Context, rc rueidis.Client) error {
	return rc.Do(ctx, rc.B().ConfigResetstat().Build()).Error()
}

// costRow is one line of the table.
type costRow struct {
	name         string
	instructions float64 // per operation (pair, or renewed hold)
	perOp        int     // operations in the difference
	phases       []phaseUsage
	note         string
}

type phaseUsage struct {
	name string
	ops  int
	u    usage
}

// callgrindRun runs f on a fresh server under callgrind and returns the
// server's instructions.
func callgrindRun(f func(rc rueidis.Client, s *callgrindServer) error) (int64, error) {
	dir, err := os.MkdirTemp("", "bench-cost-")
	if err != nil {
		return 0, err
	}
	defer os.RemoveAll(dir)
	s, err := startCallgrind(dir)
	if err != nil {
		return 0, err
	}
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{s.addr}, DisableCache: true})
	if err != nil {
		_, _ = s.stop()
		return 0, err
	}
	err = f(rc, s)
	rc.Close()
	n, serr := s.stop()
	return n, errors.Join(err, serr)
}

// pairs runs n acquire+release pairs of c on rc.
func (c costCase) pairs(ctx context.Context, rc rueidis.Client, n int) error {
	acquire, cleanup := c.open(rc)
	defer cleanup()
	for i := range n {
		release, err := acquire(ctx, i)
		if err != nil {
			return fmt.Errorf("acquire %d: %w", i, err)
		}
		if err := release(ctx); err != nil {
			return fmt.Errorf("release %d: %w", i, err)
		}
	}
	return nil
}

// commandstats runs n acquires, then their n releases, on a plain server
// of its own, and returns each phase's usage.
func (c costCase) commandstats(ctx context.Context, n int) ([]phaseUsage, error) {
	srv, err := redistest.StartMain()
	if err != nil {
		return nil, err
	}
	defer srv.Close()
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{srv.Addr()}, DisableCache: true})
	if err != nil {
		return nil, err
	}
	defer rc.Close()
	acquire, cleanup := c.open(rc)
	defer cleanup()
	// A warm-up pair loads the scripts (EVALSHA's NOSCRIPT and the EVAL
	// that follows are no part of an operation).
	release, err := acquire(ctx, -1)
	if err == nil {
		err = release(ctx)
	}
	if err != nil {
		return nil, err
	}
	releases := make([]func(context.Context) error, n)
	var out []phaseUsage
	for _, phase := range []string{"acquire", "release"} {
		if err := resetStats(ctx, rc); err != nil {
			return nil, err
		}
		for i := range n {
			if phase == "acquire" {
				if releases[i], err = acquire(ctx, i); err != nil {
					return nil, err
				}
			} else if err := releases[i](ctx); err != nil {
				return nil, err
			}
		}
		u, err := readUsage(ctx, rc)
		if err != nil {
			return nil, err
		}
		out = append(out, phaseUsage{name: phase, ops: n, u: u})
	}
	return out, nil
}

// renewalStats runs run on a plain server of its own and returns the
// usage of its renewals (the stats are reset once every lock is held and
// read before the first release), with the holds renewed meanwhile.
func renewalStats(ctx context.Context, run renewRun) (phaseUsage, error) {
	srv, err := redistest.StartMain()
	if err != nil {
		return phaseUsage{}, err
	}
	defer srv.Close()
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{srv.Addr()}, DisableCache: true})
	if err != nil {
		return phaseUsage{}, err
	}
	defer rc.Close()
	var marks [][2]int
	var u usage
	_, _, err = run(ctx, rc, costRounds, func(renewed, batches int) error {
		marks = append(marks, [2]int{renewed, batches})
		if len(marks) == 1 {
			return resetStats(ctx, rc)
		}
		var err error
		u, err = readUsage(ctx, rc)
		return err
	})
	if err != nil {
		return phaseUsage{}, err
	}
	return phaseUsage{name: "renewal", ops: marks[1][0] - marks[0][0], u: u}, nil
}
