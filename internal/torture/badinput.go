package torture

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/rueidis"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/fairlock"
	"github.com/redisync/redisync/internal/keys"
	"github.com/redisync/redisync/internal/redistest"
	"github.com/redisync/redisync/redlock"
	"github.com/redisync/redisync/rlock"
	"github.com/redisync/redisync/rwlock"
	"github.com/redisync/redisync/semaphore"
)

// The bad-input scenario (S25) feeds each input of reference/reliability.md
// §9's list to the library against a real server and checks its outcome:
// a typed error (errors.Is / errors.As), found before any I/O where it can
// be; a panic only where documented (a nil Context, a nil Client, an option
// out of range — programming errors, caught at New); never an undocumented
// panic, never state left in Redis. Each check is one row of the report.

// InputCheck is the outcome of one bad input.
type InputCheck struct {
	Input   string `json:"input"`
	Outcome string `json:"outcome"`
	OK      bool   `json:"ok"`
}

// badInputs runs the checks against the run's lock server.
func (r *runState) badInputs(ctx context.Context) []InputCheck {
	addr := r.cfg.LockAddrs[0]
	admin := r.admins[0]
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, DisableCache: true, ForceSingleClient: true})
	if err != nil {
		return []InputCheck{{Input: "connect", Outcome: err.Error()}}
	}
	defer rc.Close()
	c := redisync.New(rc)
	defer c.Close()
	var out []InputCheck
	check := func(input string, f func() (string, bool)) {
		out = append(out, r.runCheck(ctx, admin, input, f))
	}
	name := r.prefix + "bad"

	// Names are data: every primitive returns ErrInvalidName, with no I/O.
	for _, bad := range []struct{ label, name string }{{"empty name", ""}, {"64 KiB name", strings.Repeat("n", 64<<10)}} {
		check(bad.label, noIO(r, admin, func() (string, bool) {
			c2, c3 := redisync.New(rc), redisync.New(rc) // redlock's other "nodes"
			defer c2.Close()
			defer c3.Close()
			errs := []error{
				rlock.New(c, bad.name).Lock(ctx),
				fairlock.New(c, bad.name).Lock(ctx),
				rwlock.New(c, bad.name).RLock(ctx),
				rwlock.New(c, bad.name).Lock(ctx),
				redlock.New([]*redisync.Client{c, c2, c3}, bad.name).Lock(ctx),
			}
			_, err := semaphore.New(c, bad.name, 1).Acquire(ctx, 1)
			errs = append(errs, err)
			for _, err := range errs {
				if !errors.Is(err, redisync.ErrInvalidName) {
					return fmt.Sprintf("got %v", err), false
				}
			}
			return "ErrInvalidName from every primitive, no I/O", true
		}))
	}
	// Owner ids are data too: one that could be taken for a field of the
	// lock hash (or, for a read-write lock, make read-hold keys meet) is
	// ErrInvalidOwner from every lock kind, with no I/O (issue 22).
	for _, owner := range []string{"", "redisync:token", "mode", "x:write"} {
		check(fmt.Sprintf("owner id %q", owner), noIO(r, admin, func() (string, bool) {
			errs := []error{
				rlock.New(c, name, rlock.WithOwner(owner)).Lock(ctx),
				fairlock.New(c, name, fairlock.WithOwner(owner)).Lock(ctx),
				fairlock.New(c, name, fairlock.WithOwner(owner), fairlock.WithRedissonQueue(0)).Lock(ctx),
				rwlock.New(c, name, rwlock.WithOwner(owner)).RLock(ctx),
				rwlock.New(c, name, rwlock.WithOwner(owner)).Lock(ctx),
			}
			for _, err := range errs {
				if !errors.Is(err, redisync.ErrInvalidOwner) {
					return fmt.Sprintf("got %v", err), false
				}
			}
			return "ErrInvalidOwner from every lock kind, no I/O", true
		}))
	}
	// A lease below MinLease (shorter than a round trip plus the drift
	// margin: no grant would outlive its reply) is refused by every method,
	// before anything is sent.
	for _, d := range []struct {
		label string
		lease time.Duration
	}{{"lease 0", 0}, {"negative lease", -time.Second}, {"sub-millisecond lease", time.Microsecond},
		{"lease below a round trip", 2 * time.Millisecond}} {
		check(d.label, noIO(r, admin, func() (string, bool) {
			err := rlock.New(c, name, rlock.WithLease(d.lease)).Lock(ctx)
			if !errors.Is(err, redisync.ErrInvalidLease) {
				return fmt.Sprintf("Lock: %v (want ErrInvalidLease)", err), false
			}
			return "ErrInvalidLease (below MinLease), no I/O", true
		}))
	}
	// The longest lease a time.Duration holds (292 years): Redis takes it
	// (PEXPIRE in ms cannot overflow), and it is released as usual.
	check("largest lease", func() (string, bool) {
		m := rlock.New(c, name, rlock.WithLease(math.MaxInt64))
		if err := m.Lock(ctx); err != nil {
			return fmt.Sprintf("Lock: %v", err), false
		}
		ttl, err := m.TTL(ctx)
		if err := m.Unlock(ctx); err != nil {
			return fmt.Sprintf("Unlock: %v", err), false
		}
		if err != nil || ttl < 100*365*24*time.Hour {
			return fmt.Sprintf("TTL %v, %v", ttl, err), false
		}
		return fmt.Sprintf("granted with TTL %.0f years, released", ttl.Hours()/24/365), true
	})
	check("deadline already passed", noIO(r, admin, func() (string, bool) {
		dctx, cancel := context.WithTimeout(ctx, -time.Second)
		defer cancel()
		if err := rlock.New(c, name).Lock(dctx); err != context.DeadlineExceeded {
			return fmt.Sprintf("got %v", err), false
		}
		return "context.DeadlineExceeded, no I/O", true
	}))
	check("cancelled ctx", noIO(r, admin, func() (string, bool) {
		cctx, cancel := context.WithCancel(ctx)
		cancel()
		_, err := semaphore.New(c, name, 1).Acquire(cctx, 1)
		if err != context.Canceled {
			return fmt.Sprintf("got %v", err), false
		}
		return "context.Canceled, no I/O", true
	}))
	check("nil ctx", noIO(r, admin, func() (string, bool) {
		//lint:ignore SA1012 the input under test
		return documentedPanic(func() { _ = rlock.New(c, name).Lock(nil) }) //nolint:staticcheck
	}))
	check("nil Client", noIO(r, admin, func() (string, bool) {
		return documentedPanic(func() { rlock.New(nil, name) })
	}))
	// redsync #168: one constant owner value given to handles of two
	// Clients. Documented: they are one owner, so the second re-enters the
	// first's hold (counted), and only balanced releases free the lock.
	check("one owner id on two Clients", func() (string, bool) {
		c2 := redisync.New(rc)
		defer c2.Close()
		a, b := rlock.New(c, name, rlock.WithOwner("constant")), rlock.New(c2, name, rlock.WithOwner("constant"))
		if err := a.Lock(ctx); err != nil {
			return err.Error(), false
		}
		if err := b.Lock(ctx); err != nil {
			return err.Error(), false
		}
		n, _ := a.HoldCount(ctx)
		_ = b.Unlock(ctx)
		_ = a.Unlock(ctx)
		if n != 2 {
			return fmt.Sprintf("hold count %d", n), false
		}
		return "documented: one owner, the second handle re-enters (count 2)", true
	})
	check("client on a replica", func() (string, bool) { return r.replicaCheck(ctx, addr, name) })
	check("BUSY script", func() (string, bool) { return r.busyCheck(ctx, addr, admin, c, name) })
	check("ACL denies EVAL", func() (string, bool) {
		return r.aclCheck(ctx, addr, admin, name, "-eval -evalsha -fcall")
	})
	check("ACL denies PUBLISH", func() (string, bool) {
		return r.aclCheck(ctx, addr, admin, name, "-publish -spublish")
	})
	check("RESP2-only connection", func() (string, bool) { return resp2Check(ctx, addr, name) })
	// Keyspace safety (issue 13): a user's data under a lock name, kinds
	// meeting on one name, names that differ only by braces, names of our
	// own keys, counts Lua cannot hold exactly.
	for _, k := range r.keyspaceChecks(ctx, admin, c, name) {
		check(k.input, k.f)
	}
	out = append(out, InputCheck{Input: "LOADING while a node restarts", Outcome: "not produced here (needs a dataset slow to load)", OK: true})
	return out
}

// runCheck runs f, turning an undocumented panic into a failed check, and
// checks that the run's keys are all gone afterwards.
func (r *runState) runCheck(ctx context.Context, admin rueidis.Client, input string, f func() (string, bool)) (res InputCheck) {
	res.Input = input
	defer func() {
		if p := recover(); p != nil {
			res.Outcome, res.OK = fmt.Sprintf("undocumented panic: %v", p), false
		}
		if res.OK {
			if left := r.leftKeys(ctx, admin); left != "" {
				res.Outcome, res.OK = res.Outcome+"; but left "+left, false
			}
		}
	}()
	res.Outcome, res.OK = f()
	return res
}

// leftKeys lists the run's lock keys still in Redis after a check (a
// released token may linger a second; expired leases go).
func (r *runState) leftKeys(ctx context.Context, admin rueidis.Client) string {
	deadline := time.Now().Add(3 * time.Second)
	for {
		all, err := admin.Do(ctx, admin.B().Keys().Pattern("*"+r.prefix+"*").Build()).AsStrSlice()
		if err != nil {
			return err.Error()
		}
		// Last-token keys outlive a release by design (lib.lua keep_token).
		var left []string
		for _, k := range all {
			if !strings.HasPrefix(k, keys.LockTokenPrefix+":") {
				left = append(left, k)
			}
		}
		if len(left) == 0 {
			return ""
		}
		if time.Now().After(deadline) {
			return fmt.Sprint(left)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// noIO wraps a check that must send nothing to Redis: the server's command
// count (INFO itself aside) must not move.
func noIO(r *runState, admin rueidis.Client, f func() (string, bool)) func() (string, bool) {
	return func() (string, bool) {
		before := commandCalls(admin)
		outcome, ok := f()
		if after := commandCalls(admin); ok && after != before {
			return fmt.Sprintf("%s — but %d commands reached Redis", outcome, after-before), false
		}
		return outcome, ok
	}
}

// commandCalls sums the server's command counts, INFO's aside.
func commandCalls(admin rueidis.Client) int64 {
	info, err := admin.Do(context.Background(), admin.B().Info().Section("commandstats").Build()).ToString()
	if err != nil {
		return -1
	}
	var total int64
	for cmd, n := range redistest.CommandStats(info) {
		if cmd != "info" {
			total += n
		}
	}
	return total
}

// documentedPanic runs f, which must panic (a documented programming
// error).
func documentedPanic(f func()) (outcome string, ok bool) {
	defer func() {
		if p := recover(); p != nil {
			outcome, ok = fmt.Sprintf("documented panic: %v", p), true
		}
	}()
	f()
	return "no panic", false
}

// replicaCheck points a Client at a replica: TryLock fails with the
// server's READONLY error (a *rueidis.RedisError), and nothing is written.
// (Lock retries READONLY within its ctx, as a failover's demoted master
// answers it until the client follows the new one: errs.Classify.)
func (r *runState) replicaCheck(ctx context.Context, master, name string) (string, bool) {
	replica, err := redistest.StartMain()
	if err != nil {
		return err.Error(), false
	}
	defer replica.Kill()
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{replica.Addr()}, DisableCache: true, ForceSingleClient: true})
	if err != nil {
		return err.Error(), false
	}
	defer rc.Close()
	host, port, _ := strings.Cut(master, ":")
	if err := rc.Do(ctx, rc.B().Replicaof().Host(host).Port(mustAtoi(port)).Build()).Error(); err != nil {
		return err.Error(), false
	}
	c := redisync.New(rc)
	defer c.Close()
	lctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	_, err = rlock.New(c, name).TryLock(lctx)
	var re *rueidis.RedisError
	if !errors.As(err, &re) || !strings.HasPrefix(re.Error(), "READONLY") {
		return fmt.Sprintf("got %v", err), false
	}
	return "TryLock: READONLY (*rueidis.RedisError)", true
}

// busyCheck runs a script that never ends on the server: a Lock meanwhile
// gets the BUSY error, typed, then works once the script is killed.
func (r *runState) busyCheck(ctx context.Context, addr string, admin rueidis.Client, c *redisync.Client, name string) (string, bool) {
	old, _ := admin.Do(ctx, admin.B().ConfigGet().Parameter("busy-reply-threshold").Build()).AsStrMap()
	_ = admin.Do(ctx, admin.B().ConfigSet().ParameterValue().ParameterValue("busy-reply-threshold", "50").Build()).Error()
	defer func() {
		if v := old["busy-reply-threshold"]; v != "" {
			_ = admin.Do(ctx, admin.B().ConfigSet().ParameterValue().ParameterValue("busy-reply-threshold", v).Build()).Error()
		}
	}()
	spin, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, DisableCache: true, ForceSingleClient: true})
	if err != nil {
		return err.Error(), false
	}
	defer spin.Close()
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		_ = spin.Do(context.Background(), spin.B().Eval().Script("while true do end").Numkeys(0).Build()).Error()
	}()
	defer wg.Wait()
	defer func() { // on every path: the server must be usable again
		for range 500 {
			if admin.Do(ctx, admin.B().ScriptKill().Build()).Error() == nil {
				return
			}
			time.Sleep(10 * time.Millisecond)
		}
	}()
	// Wait until the server answers BUSY to anyone: the script runs.
	deadline := time.Now().Add(5 * time.Second)
	for {
		err := admin.Do(ctx, admin.B().Ping().Build()).Error()
		if err != nil && strings.HasPrefix(err.Error(), "BUSY") {
			break
		}
		if time.Now().After(deadline) {
			return fmt.Sprintf("the spinning script never made the server busy (%v)", err), false
		}
		time.Sleep(5 * time.Millisecond)
	}
	lctx, cancel := context.WithTimeout(ctx, time.Second)
	defer cancel()
	m := rlock.New(c, name)
	ok, err2 := m.TryLock(lctx)
	if ok {
		_ = m.Unlock(ctx)
		return "TryLock succeeded while a script ran", false
	}
	var re *rueidis.RedisError
	if !errors.As(err2, &re) {
		return fmt.Sprintf("got %v", err2), false
	}
	return "TryLock: BUSY (*rueidis.RedisError), nothing written", true
}

// aclCheck runs Lock and Unlock as a user denied some commands: the
// failure is a typed NOPERM error and leaves no hold behind.
func (r *runState) aclCheck(ctx context.Context, addr string, admin rueidis.Client, name, deny string) (string, bool) {
	user := "redisync-torture"
	args := append([]string{"ACL", "SETUSER", user, "reset", "on", ">pw", "~*", "&*", "+@all"}, strings.Fields(deny)...)
	if err := admin.Do(ctx, admin.B().Arbitrary(args...).Build()).Error(); err != nil {
		return err.Error(), false
	}
	defer admin.Do(ctx, admin.B().AclDeluser().Username(user).Build())
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, Username: user, Password: "pw", DisableCache: true, ForceSingleClient: true})
	if err != nil {
		return err.Error(), false
	}
	defer rc.Close()
	c := redisync.New(rc)
	defer c.Close()
	m := rlock.New(c, name)
	var re *rueidis.RedisError
	lctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	err = m.Lock(lctx)
	if err != nil {
		if errors.As(err, &re) && strings.HasPrefix(re.Error(), "NOPERM") {
			return "Lock: NOPERM (*rueidis.RedisError), nothing written", true
		}
		return fmt.Sprintf("Lock: %v", err), false
	}
	// Granted (the acquire does not publish). The release's wake-up
	// PUBLISH is denied: the release must still stand whole (a script
	// stopped at a denied command would keep its earlier writes), and
	// report success; waiters fall back to polling.
	if err := m.Unlock(lctx); err != nil {
		return fmt.Sprintf("Unlock: %v", err), false
	}
	return "Lock and Unlock ok: the denied wake-up is skipped, waiters poll", true
}

// resp2Check runs a hand-off over RESP2 connections (rueidis then keeps
// pub/sub on a dedicated connection).
func resp2Check(ctx context.Context, addr, name string) (string, bool) {
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, AlwaysRESP2: true, DisableCache: true, ForceSingleClient: true})
	if err != nil {
		return err.Error(), false
	}
	defer rc.Close()
	c := redisync.New(rc, redisync.WithMaxPoll(30*time.Second)) // a hand-off can only come from the wake-up
	defer c.Close()
	a, b := rlock.New(c, name), rlock.New(c, name)
	if err := a.Lock(ctx); err != nil {
		return fmt.Sprintf("Lock: %v", err), false
	}
	got := make(chan error, 1)
	go func() { got <- b.Lock(ctx) }() // awaited below
	time.Sleep(50 * time.Millisecond)  // let b subscribe and wait
	start := time.Now()
	if err := a.Unlock(ctx); err != nil {
		return fmt.Sprintf("Unlock: %v", err), false
	}
	select {
	case err := <-got:
		if err != nil {
			return fmt.Sprintf("waiter: %v", err), false
		}
	case <-time.After(10 * time.Second):
		_ = c.Close()
		<-got
		return "the waiter was not woken over RESP2", false
	}
	took := time.Since(start)
	_ = b.Unlock(ctx)
	return fmt.Sprintf("lock, pub/sub hand-off (%v) and unlock work", took.Round(time.Millisecond)), true
}

func mustAtoi(s string) int64 {
	n, _ := strconv.ParseInt(s, 10, 64)
	return n
}

// keyspaceCheck is one of keyspaceChecks' inputs.
type keyspaceCheck struct {
	input string
	f     func() (string, bool)
}

// keyspaceChecks are issue 13's inputs. Each leaves the run's keys as it
// found them: data it planted and a semaphore's configuration (which has
// no expiry by design) are deleted at its end.
func (r *runState) keyspaceChecks(ctx context.Context, admin rueidis.Client, c *redisync.Client, name string) []keyspaceCheck {
	do := func(args ...string) rueidis.RedisResult { return admin.Do(ctx, admin.B().Arbitrary(args...).Build()) }
	dump := func(key string) string {
		d, _ := do("DUMP", key).ToString()
		at, _ := do("PEXPIRETIME", key).AsInt64()
		return fmt.Sprintf("%q@%d", d, at)
	}
	wrongKind := func(err error) bool { return errors.Is(err, redisync.ErrWrongKind) }
	refused := func(ok bool, err error) bool { return !ok && (err == nil || wrongKind(err)) }
	data := name + ":data"
	return []keyspaceCheck{
		{"data hash under a lock name", func() (string, bool) {
			defer do("DEL", data)
			do("HSET", data, "name", "Ann", "email", "ann@example.com")
			before := dump(data)
			rw := rwlock.New(c, data)
			if ok, err := rw.TryRLock(ctx); !refused(ok, err) {
				return fmt.Sprintf("rwlock TryRLock: %v, %v", ok, err), false
			}
			if ok, err := rw.TryLock(ctx); !refused(ok, err) {
				return fmt.Sprintf("rwlock TryLock: %v, %v", ok, err), false
			}
			for label, force := range map[string]func(context.Context) (bool, error){
				"rlock": rlock.New(c, data).ForceUnlock, "fairlock": fairlock.New(c, data).ForceUnlock, "rwlock": rwlock.New(c, data).ForceUnlock,
			} {
				if _, err := force(ctx); !wrongKind(err) {
					return fmt.Sprintf("%s ForceUnlock: %v", label, err), false
				}
			}
			if after := dump(data); after != before {
				return "the data hash changed", false
			}
			return "rwlock refuses (ErrWrongKind), force-unlocks refuse, the hash is byte-identical", true
		}},
		{"cross-kind names", func() (string, bool) {
			m := rlock.New(c, name)
			if err := m.Lock(ctx); err != nil {
				return fmt.Sprintf("rlock Lock: %v", err), false
			}
			rw := rwlock.New(c, name)
			ok1, err1 := rw.TryLock(ctx)
			ok2, err2 := rw.TryRLock(ctx)
			_, ok3, err3 := semaphore.New(c, name, 1).TryAcquire(ctx, 1)
			ok4, err4 := redlock.New([]*redisync.Client{c}, name).TryLock(ctx)
			if err := m.Unlock(ctx); err != nil {
				return fmt.Sprintf("rlock Unlock: %v", err), false
			}
			if !refused(ok1, err1) || !refused(ok2, err2) || !refused(ok3, err3) || !refused(ok4, err4) {
				return fmt.Sprintf("beside a held rlock: rwlock write %v %v, read %v %v, semaphore %v %v, redlock %v %v",
					ok1, err1, ok2, err2, ok3, err3, ok4, err4), false
			}
			return "beside a held rlock, rwlock is busy and semaphore and redlock refuse; the rlock releases cleanly", true
		}},
		{"names differing by braces", func() (string, bool) {
			plain, braced := name+"x", "{"+name+"x}"
			a, b := fairlock.New(c, plain), fairlock.New(c, braced)
			if err := a.Lock(ctx); err != nil {
				return err.Error(), false
			}
			ok, err := b.TryLock(ctx)
			if ok {
				_ = b.Unlock(ctx)
			}
			_ = a.Unlock(ctx)
			p, err1 := semaphore.New(c, plain, 1).Acquire(ctx, 1)
			q, ok2, err2 := semaphore.New(c, braced, 1).TryAcquire(ctx, 1)
			if p != nil {
				_ = p.Release(ctx)
			}
			if q != nil {
				_ = q.Release(ctx)
			}
			do("DEL", plain, braced)
			if !ok || err != nil || err1 != nil || !ok2 || err2 != nil {
				return fmt.Sprintf("fair lock %q beside %q: %v %v; semaphores: %v, %v %v", braced, plain, ok, err, err1, ok2, err2), false
			}
			return fmt.Sprintf("%q and %q are independent fair locks and semaphores", plain, braced), true
		}},
		{"names of internal keys", noIO(r, admin, func() (string, bool) {
			for _, bad := range []string{"redisync_sem_permits:{" + name + "}", "redisync_lock_token:{" + name + "}:" + name,
				"{" + name + "}:owner:rwlock_timeout:1"} {
				if err := rlock.New(c, bad).Lock(ctx); !errors.Is(err, redisync.ErrInvalidName) {
					return fmt.Sprintf("rlock %q: %v", bad, err), false
				}
				if _, err := semaphore.New(c, bad, 1).Acquire(ctx, 1); !errors.Is(err, redisync.ErrInvalidName) {
					return fmt.Sprintf("semaphore %q: %v", bad, err), false
				}
			}
			return "ErrInvalidName, no I/O", true
		})},
		{"huge counts", noIO(r, admin, func() (string, bool) {
			for _, n := range []int{1e17, math.MaxInt64} {
				if _, err := semaphore.New(c, name, n).Acquire(ctx, 1); !errors.Is(err, semaphore.ErrBadCount) {
					return fmt.Sprintf("capacity %d: %v", n, err), false
				}
				if _, err := semaphore.New(c, name, 1).Acquire(ctx, n); !errors.Is(err, semaphore.ErrBadCount) {
					return fmt.Sprintf("count %d: %v", n, err), false
				}
			}
			return "ErrBadCount for capacities and counts of 1e17 and MaxInt64, no I/O", true
		})},
		{"capacity in Redis beyond exact", func() (string, bool) {
			defer do("DEL", name)
			do("HSET", name, "capacity", strconv.Itoa(math.MaxInt64))
			got, err := semaphore.New(c, name, 1).Capacity(ctx)
			if !wrongKind(err) {
				return fmt.Sprintf("Capacity: %d, %v", got, err), false
			}
			return "Capacity: ErrWrongKind (never a rounded or wrapped number)", true
		}},
	}
}
