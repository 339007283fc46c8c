// Command driver is the mixed-version test's worker (see the mixedversion
// package): it takes and releases each primitive in a loop against one
// redis-server and reports its critical sections. The same source is built
// against the previous release and against HEAD, so it uses only API that
// exists in both (the stability rule of issue 15 keeps it that way).
//
// Inside each critical section a worker INCRs a counter shared by every
// process ("<prefix>:<kind>:inside"): a reply above 1 means someone else was
// inside at the same time, an overlap. It also swaps the section's fencing
// token into "<prefix>:<kind>:last" (SET ... GET): a token not above the
// one before it is a regression. At the end it prints one JSON line per
// kind (Report) on stdout.
//
// The rwlock's two sides run as two kinds on one lock name: "rwlock" takes
// the write side and "rwlock-read" the read side. Readers may share, so a
// reader counts itself in "<prefix>:rwlock:readers" and checks that no
// writer is inside; a writer checks, after its INCR, that no reader is (of
// two that overlap, the later one to count itself sees the other). Read
// holds of one phase share a token, so readers check no token order.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/rueidis"
	"github.com/redisync/redisync"
	"github.com/redisync/redisync/fairlock"
	"github.com/redisync/redisync/redlock"
	"github.com/redisync/redisync/rlock"
	"github.com/redisync/redisync/rwlock"
	"github.com/redisync/redisync/semaphore"
)

// Report is one kind's outcome in one process.
type Report struct {
	Label       string `json:"label"`
	Kind        string `json:"kind"`
	Sections    int    `json:"sections"`
	Overlaps    int    `json:"overlaps"`
	Regressions int    `json:"regressions"`
	Timeouts    int    `json:"timeouts"`
	Errors      int    `json:"errors"`
	FirstError  string `json:"first_error,omitempty"`
}

// section is one hold: acquire, then release.
type section struct {
	acquire func(ctx context.Context) (token uint64, err error)
	release func(ctx context.Context) error
	shared  bool // a read hold: others may hold with it
}

func main() {
	addr := flag.String("addr", "", "redis-server address")
	prefix := flag.String("prefix", "mixedversion", "prefix of the lock names and counter keys")
	kinds := flag.String("kinds", "rlock,fairlock,rwlock,rwlock-read,semaphore,redlock", "primitives to run, comma-separated")
	label := flag.String("label", "", "this build's name in the reports")
	run := flag.Duration("for", 3*time.Second, "how long to keep taking locks")
	workers := flag.Int("workers", 2, "handles per kind, each in its own goroutine")
	holdFor := flag.Duration("hold", 2*time.Millisecond, "time spent inside each critical section")
	flag.Parse()
	if err := drive(*addr, *prefix, *label, strings.Split(*kinds, ","), *run, *workers, *holdFor); err != nil {
		fmt.Fprintln(os.Stderr, "driver:", err)
		os.Exit(1)
	}
}

func drive(addr, prefix, label string, kinds []string, run time.Duration, workers int, holdFor time.Duration) error {
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{addr}, DisableCache: true})
	if err != nil {
		return fmt.Errorf("connect %s: %w", addr, err)
	}
	defer rc.Close()
	// A short poll bounds the wait for a release the other version's
	// wake-up does not reach (its fair queue or channel may differ).
	c := redisync.New(rc, redisync.WithMaxPoll(100*time.Millisecond))
	defer c.Close()
	deadline := time.Now().Add(run)
	reports := make([]*Report, len(kinds))
	var wg sync.WaitGroup
	for i, kind := range kinds {
		reports[i] = &Report{Label: label, Kind: kind}
		var mu sync.Mutex
		for range workers {
			s, err := newSection(c, kind, prefix+"-"+strings.TrimSuffix(kind, "-read"))
			if err != nil {
				return err
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				loop(rc, s, prefix+":"+strings.TrimSuffix(kind, "-read"), deadline, holdFor, reports[i], &mu)
			}()
		}
	}
	wg.Wait()
	enc := json.NewEncoder(os.Stdout)
	for _, r := range reports {
		if err := enc.Encode(r); err != nil {
			return err
		}
	}
	return nil
}

// newSection returns a fresh handle of kind on name.
func newSection(c *redisync.Client, kind, name string) (section, error) {
	switch kind {
	case "rlock":
		m := rlock.New(c, name)
		return section{func(ctx context.Context) (uint64, error) { err := m.Lock(ctx); return m.Token(), err }, m.Unlock, false}, nil
	case "fairlock":
		m := fairlock.New(c, name)
		return section{func(ctx context.Context) (uint64, error) { err := m.Lock(ctx); return m.Token(), err }, m.Unlock, false}, nil
	case "rwlock":
		w := rwlock.New(c, name).WriteLocker()
		return section{func(ctx context.Context) (uint64, error) { err := w.Lock(ctx); return w.Token(), err }, w.Unlock, false}, nil
	case "rwlock-read":
		r := rwlock.New(c, name).ReadLocker()
		return section{func(ctx context.Context) (uint64, error) { err := r.Lock(ctx); return r.Token(), err }, r.Unlock, true}, nil
	case "semaphore":
		s := semaphore.New(c, name, 1)
		var p *semaphore.Permit
		return section{
			func(ctx context.Context) (uint64, error) {
				var err error
				p, err = s.Acquire(ctx, 1)
				if err != nil {
					return 0, err
				}
				return p.Token(), nil
			},
			func(ctx context.Context) error { return p.Release(ctx) },
			false,
		}, nil
	case "redlock":
		m := redlock.New([]*redisync.Client{c}, name)
		return section{func(ctx context.Context) (uint64, error) { err := m.Lock(ctx); return m.Token(), err }, m.Unlock, false}, nil
	}
	return section{}, fmt.Errorf("unknown kind %q", kind)
}

// acquireTimeout bounds one wait, so that a process whose grants the
// other version starves still reaches its deadline.
const acquireTimeout = 5 * time.Second

func loop(rc rueidis.Client, s section, counter string, deadline time.Time, holdFor time.Duration, r *Report, mu *sync.Mutex) {
	note := func(f func()) { mu.Lock(); f(); mu.Unlock() }
	fail := func(err error) {
		note(func() {
			r.Errors++
			if r.FirstError == "" {
				r.FirstError = err.Error()
			}
		})
		time.Sleep(10 * time.Millisecond)
	}
	for time.Now().Before(deadline) {
		ctx, cancel := context.WithTimeout(context.Background(), acquireTimeout)
		token, err := s.acquire(ctx)
		cancel()
		if errors.Is(err, context.DeadlineExceeded) {
			note(func() { r.Timeouts++ })
			continue
		}
		if err != nil {
			fail(fmt.Errorf("acquire: %w", err))
			continue
		}
		if s.shared {
			reading(rc, counter, holdFor, r, note, fail)
		} else {
			inside(rc, counter, token, holdFor, r, note, fail)
		}
		ctx, cancel = context.WithTimeout(context.Background(), acquireTimeout)
		if err := s.release(ctx); err != nil {
			fail(fmt.Errorf("release: %w", err))
		}
		cancel()
		if s.shared {
			// Readers leave gaps, or together they could keep the lock in
			// read mode for the whole run and starve the writers.
			time.Sleep(readerPause)
		}
	}
}

// readerPause is a reader's rest between two read holds.
const readerPause = 10 * time.Millisecond

// inside is the critical section: count who is in, check the token.
func inside(rc rueidis.Client, counter string, token uint64, holdFor time.Duration, r *Report, note func(func()), fail func(error)) {
	ctx := context.Background()
	n, err := rc.Do(ctx, rc.B().Incr().Key(counter+":inside").Build()).AsInt64()
	if err != nil {
		fail(fmt.Errorf("incr: %w", err))
		return
	}
	prev, err := rc.Do(ctx, rc.B().Set().Key(counter+":last").Value(strconv.FormatUint(token, 10)).Get().Build()).ToString()
	if err != nil && !rueidis.IsRedisNil(err) {
		fail(fmt.Errorf("set last token: %w", err))
	}
	last, _ := strconv.ParseUint(prev, 10, 64)
	readers, err := rc.Do(ctx, rc.B().Get().Key(counter+":readers").Build()).AsInt64()
	if err != nil && !rueidis.IsRedisNil(err) {
		fail(fmt.Errorf("get readers: %w", err))
	}
	time.Sleep(holdFor)
	if err := rc.Do(ctx, rc.B().Decr().Key(counter+":inside").Build()).Error(); err != nil {
		fail(fmt.Errorf("decr: %w", err))
	}
	note(func() {
		r.Sections++
		if n > 1 || readers > 0 {
			r.Overlaps++
		}
		if prev != "" && token <= last {
			r.Regressions++
		}
	})
}

// reading is a read hold's section: count the readers in, and check that
// no writer is inside.
func reading(rc rueidis.Client, counter string, holdFor time.Duration, r *Report, note func(func()), fail func(error)) {
	ctx := context.Background()
	if err := rc.Do(ctx, rc.B().Incr().Key(counter+":readers").Build()).Error(); err != nil {
		fail(fmt.Errorf("incr readers: %w", err))
		return
	}
	writers, err := rc.Do(ctx, rc.B().Get().Key(counter+":inside").Build()).AsInt64()
	if err != nil && !rueidis.IsRedisNil(err) {
		fail(fmt.Errorf("get writers: %w", err))
	}
	time.Sleep(holdFor)
	if err := rc.Do(ctx, rc.B().Decr().Key(counter+":readers").Build()).Error(); err != nil {
		fail(fmt.Errorf("decr readers: %w", err))
	}
	note(func() {
		r.Sections++
		if writers > 0 {
			r.Overlaps++
		}
	})
}
