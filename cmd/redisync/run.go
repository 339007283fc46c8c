package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"strconv"
	"syscall"
	"time"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/fairlock"
	"github.com/redisync/redisync/rlock"
	"github.com/redisync/redisync/semaphore"
)

// runFlags are the flags of `run` and `sem run`.
type runFlags struct {
	conn     *connFlags
	wait     time.Duration
	lease    time.Duration
	grace    time.Duration
	fenceEnv string
}

func addRunFlags(fs *flag.FlagSet) *runFlags {
	f := &runFlags{conn: addConnFlags(fs, false)}
	f.wait = -1
	fs.Var((*waitFlag)(&f.wait), "wait", "give up (exit 75) if not acquired within this long; 0: try once")
	fs.DurationVar(&f.lease, "lease", redisync.DefaultWatchdogTimeout, "lease, renewed every third while the command runs: how long the hold outlives this process if it dies")
	fs.DurationVar(&f.grace, "grace", 10*time.Second, "after the lock is lost, how long the command has between SIGTERM and SIGKILL")
	fs.StringVar(&f.fenceEnv, "fence-env", "", "pass the fencing token to the command in this environment variable")
	return f
}

const runAbout = `
Holds the lock NAME while CMD runs, renewing it, and releases it when CMD
exits.
` + runAboutTail

const runAboutTail = `
redisync exits with CMD's status (128+n if a signal n ended it). SIGINT and
SIGTERM are passed on to CMD (its process group) and the hold is released
after it exits.

If the hold is lost while CMD runs (renewal failed, key deleted, server
gone), CMD gets SIGTERM, then SIGKILL after --grace, and redisync exits 76.
If the hold cannot be had within --wait, it exits 75 without running CMD.
Other statuses: 1 Redis error, 2 usage, 127 CMD cannot be started.`

// runCmd is `redisync run`.
func runCmd(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("run", "run [flags] NAME -- CMD [ARGS...]", runAbout, stdout, stderr)
	f := addRunFlags(fs.FlagSet)
	fair := fs.Bool("fair", false, "use a fair (FIFO) lock instead of a reentrant one")
	if done, code := parseFlags(fs, args); done {
		return code
	}
	name, cmd, ok := splitCommand(fs.Args())
	if !ok {
		return fail(stderr, "run", exitUsage, "want NAME -- CMD [ARGS...] (see --help)")
	}
	return f.under("run", name, cmd, stderr, func(c *redisync.Client) holdable {
		if *fair {
			return lockHold{fairlock.New(c, name)}
		}
		return lockHold{rlock.New(c, name)}
	})
}

// semCmd is `redisync sem run`.
func semCmd(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] != "run" {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help") {
			fmt.Fprintln(stdout, "usage: redisync sem run [flags] NAME -- CMD [ARGS...]\n\nrun 'redisync sem run --help' for its flags")
			return 0
		}
		return fail(stderr, "sem", exitUsage, "want 'sem run' (see 'redisync sem run --help')")
	}
	fs := newFlagSet("sem run", "sem run --permits N [flags] NAME -- CMD [ARGS...]", `
Like 'redisync run', with permits of the semaphore NAME instead of a lock:
at most N commands run at once across every machine that uses NAME.
--permits sets the capacity when the semaphore has none yet; after that the
capacity stored in Redis wins.
`+runAboutTail, stdout, stderr)
	f := addRunFlags(fs.FlagSet)
	permits := fs.Int("permits", 0, "the semaphore's capacity (required)")
	count := fs.Int("count", 1, "permits this command takes")
	if done, code := parseFlags(fs, args[1:]); done {
		return code
	}
	name, cmd, ok := splitCommand(fs.Args())
	if !ok {
		return fail(stderr, "sem run", exitUsage, "want NAME -- CMD [ARGS...] (see --help)")
	}
	if *permits < 1 || *count < 1 {
		return fail(stderr, "sem run", exitUsage, "--permits and --count must be at least 1")
	}
	return f.under("sem run", name, cmd, stderr, func(c *redisync.Client) holdable {
		return &permitHold{sem: semaphore.New(c, name, *permits), n: *count}
	})
}

// holdable is what `run` and `sem run` hold while the command runs.
type holdable interface {
	acquire(ctx context.Context, wait time.Duration) (bool, error)
	release(ctx context.Context) error
	token() uint64
	done() <-chan struct{}
}

type lockHold struct{ l redisync.Locker }

func (h lockHold) acquire(ctx context.Context, wait time.Duration) (bool, error) {
	if wait == 0 {
		return h.l.TryLock(ctx)
	}
	return true, h.l.Lock(ctx)
}
func (h lockHold) release(ctx context.Context) error { return h.l.Unlock(ctx) }
func (h lockHold) token() uint64                     { return h.l.Token() }
func (h lockHold) done() <-chan struct{}             { return h.l.Done() }

type permitHold struct {
	sem *semaphore.Semaphore
	n   int
	p   *semaphore.Permit
}

func (h *permitHold) acquire(ctx context.Context, wait time.Duration) (bool, error) {
	var err error
	ok := true
	if wait == 0 {
		h.p, ok, err = h.sem.TryAcquire(ctx, h.n)
	} else {
		h.p, err = h.sem.Acquire(ctx, h.n)
	}
	return ok && err == nil, err
}
func (h *permitHold) release(ctx context.Context) error { return h.p.Release(ctx) }
func (h *permitHold) token() uint64                     { return h.p.Token() }
func (h *permitHold) done() <-chan struct{}             { return h.p.Done() }

// under acquires, runs cmd, and releases; it returns the exit status.
func (f *runFlags) under(what, name string, cmd []string, stderr io.Writer, newHold func(*redisync.Client) holdable) int {
	if f.lease < 10*time.Millisecond || f.grace < 0 {
		return fail(stderr, what, exitUsage, "--lease must be at least 10ms and --grace not negative")
	}
	if name == "" || len(name) > rlock.MaxNameLength {
		return fail(stderr, what, exitUsage, "bad name %q", name)
	}
	rc, _, closeRC, err := f.conn.connect(false)
	if err != nil {
		return fail(stderr, what, exitError, "%v", err)
	}
	defer closeRC()
	c := redisync.New(rc, redisync.WithWatchdogTimeout(f.lease))
	defer c.Close()

	// SIGINT/SIGTERM while waiting abandon the wait; while CMD runs they are
	// passed on to it.
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM)
	defer signal.Stop(sigs)

	h := newHold(c)
	ctx, cancel := context.WithCancel(context.Background())
	if f.wait > 0 {
		ctx, cancel = context.WithTimeout(context.Background(), f.wait)
	}
	got := make(chan error, 1)
	var acquired bool
	go func() {
		var err error
		acquired, err = h.acquire(ctx, f.wait)
		got <- err
	}()
	var sig os.Signal
	select {
	case err = <-got:
	case sig = <-sigs:
		cancel()
		err = <-got
	}
	cancel()
	switch {
	case sig != nil && !acquired:
		return 128 + int(sig.(syscall.Signal))
	case sig != nil:
		_ = h.release(context.Background())
		return 128 + int(sig.(syscall.Signal))
	case errors.Is(err, context.DeadlineExceeded) || err == nil && !acquired:
		return fail(stderr, what, exitBusy, "%s is busy: not acquired within --wait %v", name, max(f.wait, 0))
	case err != nil:
		return fail(stderr, what, exitError, "acquire %s: %v", name, err)
	}

	code, lost := f.runCommand(cmd, h, sigs, stderr, what)
	rctx, rcancel := context.WithTimeout(context.Background(), connectTimeout)
	defer rcancel()
	if err := h.release(rctx); err != nil && !lost && !errors.Is(err, redisync.ErrLockLost) {
		fmt.Fprintf(stderr, "redisync %s: release %s: %v (it expires within --lease)\n", what, name, err)
	}
	if lost {
		return fail(stderr, what, exitLost, "%s was lost while the command ran: it was terminated", name)
	}
	return code
}

// runCommand starts cmd in its own process group and waits for it, passing
// signals on, and terminating it if the hold ends. It returns cmd's exit
// status and whether the hold was lost.
func (f *runFlags) runCommand(argv []string, h holdable, sigs <-chan os.Signal, stderr io.Writer, what string) (int, bool) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Env = os.Environ()
	if f.fenceEnv != "" {
		cmd.Env = append(cmd.Env, f.fenceEnv+"="+strconv.FormatUint(h.token(), 10))
	}
	if err := cmd.Start(); err != nil {
		return fail(stderr, what, exitNoStart, "cannot start %s: %v", argv[0], err), false
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	group := func(sig syscall.Signal) { _ = syscall.Kill(-cmd.Process.Pid, sig) }

	lostCh, lost := h.done(), false
	var kill <-chan time.Time
	for {
		select {
		case err := <-exited:
			return exitStatus(err), lost
		case sig := <-sigs:
			group(sig.(syscall.Signal))
		case <-lostCh:
			lostCh, lost = nil, true
			fmt.Fprintf(stderr, "redisync %s: lock lost while the command runs: sending SIGTERM\n", what)
			group(syscall.SIGTERM)
			kill = time.After(f.grace)
		case <-kill:
			group(syscall.SIGKILL)
		}
	}
}

// exitStatus turns cmd.Wait's error into a shell-style exit status.
func exitStatus(err error) int {
	var ee *exec.ExitError
	if !errors.As(err, &ee) {
		if err != nil {
			return exitError
		}
		return 0
	}
	if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
		return 128 + int(ws.Signal())
	}
	return ee.ExitCode()
}

// waitFlag is --wait: a duration, or "forever" (-1, the default).
type waitFlag time.Duration

func (w *waitFlag) String() string {
	if *w < 0 {
		return "forever"
	}
	return time.Duration(*w).String()
}

func (w *waitFlag) Set(s string) error {
	if s == "forever" {
		*w = -1
		return nil
	}
	d, err := time.ParseDuration(s)
	if err != nil || d < 0 {
		return fmt.Errorf("want a duration such as 30s, 0 or forever")
	}
	*w = waitFlag(d)
	return nil
}
