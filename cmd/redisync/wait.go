package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/redis/rueidis"

	"github.com/redisync/redisync/internal/errs"
)

// Pacing of the wait: retries after a Redis error, and --verbose progress.
const (
	retryFirst    = 100 * time.Millisecond // first pause after a Redis error; doubles
	retryMax      = 2 * time.Second        // longest pause between retries
	progressFirst = time.Second            // first progress line (--verbose)
	progressEvery = 10 * time.Second       // later progress lines
	finalTryLimit = 2 * time.Second        // the last attempt when --wait has passed
	connectTryMin = finalTryLimit          // the shortest connect attempt within --wait
)

// acquirer takes the hold within --wait.
type acquirer struct {
	what, name string
	wait       time.Duration // -1: forever
	spent      time.Duration // of wait, before the first attempt (connecting)
	verbose    bool
	rc         rueidis.Client
	h          holdable
	stderr     io.Writer
}

type attempt struct {
	ok  bool
	err error
}

// acquire waits for the hold. It returns (-1, nil) when the hold is taken,
// (-1, sig) when it was taken as a signal came (the caller releases it), and
// an exit status otherwise: 75 only when --wait passed and the hold was still
// taken by others; Redis errors while waiting are retried until then.
func (w *acquirer) acquire(sigs <-chan os.Signal) (int, os.Signal) {
	ctx, cancel := context.WithCancel(context.Background())
	if w.wait > 0 {
		ctx, cancel = context.WithTimeout(context.Background(), max(w.wait-w.spent, time.Nanosecond))
	}
	defer cancel()
	stopProgress := w.progress(ctx)
	defer stopProgress()
	pause := retryFirst
	var lastErr error
	for {
		got := make(chan attempt, 1)
		go func() {
			ok, err := w.h.acquire(ctx, w.wait)
			got <- attempt{ok, err}
		}()
		var a attempt
		select {
		case a = <-got:
		case sig := <-sigs:
			cancel()
			if a = <-got; a.ok && a.err == nil {
				return -1, sig
			}
			return 128 + int(sig.(syscall.Signal)), nil
		}
		switch {
		case a.ok && a.err == nil:
			return -1, nil
		case a.err == nil: // one try, and it is taken
			return w.busy(), nil
		case ctx.Err() != nil:
			return w.lastTry(lastErr)
		case !transient(a.err) || w.wait == 0:
			return fail(w.stderr, w.what, exitError, "%s", acquireFailure(w.name, a.err)), nil
		}
		lastErr = a.err
		if w.verbose {
			fmt.Fprintf(w.stderr, "redisync %s: %s: %s; retrying within --wait %s\n", w.what, printable(w.name), controlsShown(a.err.Error()), (*waitFlag)(&w.wait))
		}
		select {
		case <-time.After(pause):
		case <-ctx.Done():
			return w.lastTry(lastErr)
		case sig := <-sigs:
			return 128 + int(sig.(syscall.Signal)), nil
		}
		pause = min(2*pause, retryMax)
	}
}

// lastTry runs when --wait has passed: one more attempt tells a lock held by
// others (75) from a Redis that could not be reached (1) — and takes the
// lock if it has just come free.
func (w *acquirer) lastTry(lastErr error) (int, os.Signal) {
	ctx, cancel := context.WithTimeout(context.Background(), finalTryLimit)
	defer cancel()
	ok, err := w.h.acquire(ctx, 0)
	switch {
	case err == nil && ok:
		return -1, nil
	case err == nil:
		return w.busy(), nil
	case lastErr != nil || ctx.Err() != nil:
		// Errors until the end, or a last try that got no answer: Redis
		// could not tell whether the hold is free.
		return fail(w.stderr, w.what, exitError, "%s: Redis failed until --wait %s passed: %v", printable(w.name), (*waitFlag)(&w.wait), err), nil
	}
	return fail(w.stderr, w.what, exitError, "%s", acquireFailure(w.name, err)), nil
}

// acquireFailure says why taking name failed, naming it once: the
// library's errors already name the lock ("rlock \"x\": waiting for the
// lock: EOF"); an error that does not gets the name in front. Both are
// escaped for the terminal.
func acquireFailure(name string, err error) string {
	msg := err.Error()
	if strings.Contains(msg, strconv.Quote(name)) {
		return printable(msg)
	}
	return "acquire " + printable(name) + ": " + printable(msg)
}

// busy reports a hold taken by others: exit 75.
func (w *acquirer) busy() int {
	ctx, cancel := context.WithTimeout(context.Background(), connectTimeout)
	defer cancel()
	who := ""
	if r, err := inspect(ctx, w.rc, w.name); err == nil {
		who = ": " + holders(r)
	}
	if w.wait == 0 {
		return fail(w.stderr, w.what, exitBusy, "%s is busy%s (tried once: --wait 0)", printable(w.name), who)
	}
	return fail(w.stderr, w.what, exitBusy, "%s is busy%s; not acquired within --wait %s", printable(w.name), who, (*waitFlag)(&w.wait))
}

// progress prints, with --verbose, who holds the lock while we wait; the
// returned function stops it and waits for it to end.
func (w *acquirer) progress(ctx context.Context) func() {
	if !w.verbose {
		return func() {}
	}
	stop, done := make(chan struct{}), make(chan struct{})
	start := time.Now()
	go func() {
		defer close(done)
		t := time.NewTimer(progressFirst)
		defer t.Stop()
		for {
			select {
			case <-stop:
				return
			case <-ctx.Done():
				return
			case <-t.C:
			}
			ictx, cancel := context.WithTimeout(ctx, connectTimeout)
			r, err := inspect(ictx, w.rc, w.name)
			cancel()
			state := ""
			if err != nil {
				state = fmt.Sprintf("cannot look: %v", err)
			} else {
				state = holders(r)
			}
			fmt.Fprintf(w.stderr, "redisync %s: waiting for %s for %s: %s\n", w.what, printable(w.name), time.Since(start).Round(time.Second), state)
			t.Reset(progressEvery)
		}
	}()
	return func() { close(stop); <-done }
}

// holders says who holds what inspect found, for one line.
func holders(r inspection) string {
	if !r.Locked && len(r.Queue) == 0 && r.Capacity == nil {
		return "nobody holds it"
	}
	var parts []string
	for _, h := range r.Holders {
		p := "held by " + h.describe() // host, pid, program, age, label: escaped
		if h.Side != "" {
			p += " (" + h.Side + ")"
		}
		if h.LeaseMs > 0 {
			p += ", lease " + ms(h.LeaseMs) + " left"
		}
		parts = append(parts, p)
	}
	if r.Capacity != nil {
		parts = append(parts, fmt.Sprintf("%d of %d permits held", *r.Used, *r.Capacity))
	}
	if n := len(r.Queue); n > 0 {
		parts = append(parts, fmt.Sprintf("%d waiting in its queue", n))
	}
	if len(parts) == 0 {
		return "nobody holds it"
	}
	return strings.Join(parts, "; ")
}

// transient reports whether an error is worth retrying within --wait: it is
// in errs.Classify's Transient class, the one the library's own waits use —
// the connection (refused, reset, timed out, a server restarting, loading
// or stalled, a failover) and Redis's own "try later" replies. Errors of
// the request itself (a bad name, a permit count out of range, a key of
// another kind, an ACL's NOPERM, authentication) are not: no retry changes
// them, and they end the command at once.
func transient(err error) bool { return errs.Classify(err) == errs.Transient }

// connectWithin reaches Redis for run and sem run. A failure that may pass
// (Redis not up yet, restarting or stalled: a refused connection, or one
// that got no answer in time) is retried until --wait passes, as the wait
// for the lock retries it, and said once on stderr (each retry with
// --verbose); --wait 0 tries once, and an error that cannot pass (a bad
// URL, a wrong password, TLS) ends it at once. Within a --wait, an attempt
// gets what is left of it, at least connectTryMin (and at most the dial
// timeout for each of dial and handshake), so that a stalled server ends
// the connecting at most connectTryMin after --wait passed. It returns the
// client, its close function and how long the connecting took, or an exit
// status (>= 0).
func (f *runFlags) connectWithin(what string, stderr io.Writer, sigs <-chan os.Signal) (rueidis.Client, func(), time.Duration, int) {
	start := time.Now()
	pause := retryFirst
	for tries := 0; ; tries++ {
		var bound time.Duration // forever: connect's own timeouts
		if f.wait >= 0 {
			bound = max(f.wait-time.Since(start), connectTryMin) // --wait 0: one attempt of connectTryMin
		}
		rc, _, closeRC, err := f.conn.connectBounded(bound)
		if err == nil {
			return rc, closeRC, time.Since(start), -1
		}
		left := f.wait - time.Since(start)
		switch {
		case !(transient(err) || errors.Is(err, context.DeadlineExceeded)) || f.wait == 0:
			return nil, nil, 0, fail(stderr, what, exitError, "%v", err)
		case f.wait > 0 && left <= 0:
			return nil, nil, 0, fail(stderr, what, exitError, "%v; retried until --wait %s passed", err, (*waitFlag)(&f.wait))
		case tries == 0 || f.verbose:
			fmt.Fprintf(stderr, "redisync %s: %s; retrying within --wait %s\n", what, controlsShown(err.Error()), (*waitFlag)(&f.wait))
		}
		d := pause
		if f.wait > 0 {
			d = min(d, left)
		}
		select {
		case <-time.After(d):
		case sig := <-sigs:
			return nil, nil, 0, 128 + int(sig.(syscall.Signal))
		}
		pause = min(2*pause, retryMax)
	}
}
