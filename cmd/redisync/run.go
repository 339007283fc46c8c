package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/fairlock"
	"github.com/redisync/redisync/rlock"
	"github.com/redisync/redisync/semaphore"
)

// defaultGrace is --grace: how long a command has between SIGTERM and
// SIGKILL after its lock was lost.
const defaultGrace = 10 * time.Second

// runFlags are the flags of `run` and `sem run`.
type runFlags struct {
	conn     *connFlags
	wait     time.Duration
	lease    time.Duration
	grace    time.Duration
	fenceEnv string
	passEnv  bool
	verbose  bool
	label    string
}

func addRunFlags(fs *flag.FlagSet) *runFlags {
	f := &runFlags{conn: addConnFlags(fs, false)}
	f.wait = -1
	fs.Var((*waitFlag)(&f.wait), "wait", "give up (exit 75) if the lock is still held by others after this long; 0: try once; Redis errors that pass by themselves (connection refused or reset, a restart, a failover) are retried meanwhile, also before the first contact")
	fs.DurationVar(&f.lease, "lease", redisync.DefaultWatchdogTimeout, "lease, renewed every third while the command runs: how long the hold outlives this process if it dies")
	fs.DurationVar(&f.grace, "grace", defaultGrace, "after the lock is lost, how long the command has between SIGTERM and SIGKILL")
	fs.StringVar(&f.fenceEnv, "fence-env", "", "pass the fencing token to the command in this environment variable")
	fs.BoolVar(&f.passEnv, "pass-env", false, "pass $"+envURL+", $"+envUser+", $"+envPassword+" and $"+envPrefix+"* on to the command (removed by default: they carry credentials)")
	fs.BoolVar(&f.verbose, "verbose", false, "while waiting, say every few seconds who holds it and for how long; say each Redis error that is retried")
	fs.StringVar(&f.label, "label", "", "a note stored with the hold beside host, pid, program and start, shown by inspect and unlock --force (at most 128 bytes)")
	return f
}

const runAbout = `
Holds the lock NAME while CMD runs, renewing it, and releases it when CMD
exits. Flags may stand before or after NAME; -- before CMD is required.
` + runAboutTail

const runAboutTail = `
redisync exits with CMD's status (128+n if a signal n ended it). SIGINT,
SIGTERM, SIGHUP and SIGQUIT are passed on to CMD (its process group) and the
hold is released after it exits. CMD never outlives redisync: it runs in its
own process group, and if redisync itself dies (even by kill -9) the kernel
kills CMD (parent-death signal; processes CMD started in the background are
its own affair). Run from an interactive shell, CMD gets the terminal (its
process group is put in the foreground); in the background, a CMD stopped
for reading or writing the terminal is reported, and keeps the lock while
stopped.

CMD does not see $REDIS_URL, $REDIS_USER, $REDIS_PASSWORD or any
$REDISYNC_* variable unless --pass-env is given.

If the hold is lost while CMD runs (renewal failed, key deleted, server
gone), CMD gets SIGTERM at once (the library reports a loss before the lease
has run out by this machine's clock), then SIGKILL after --grace; redisync
says why (asking Redis for at most 1 s) and exits 76. If the hold is still
taken by others when --wait passes, it exits 75 without running CMD. Redis
errors that pass by themselves (a connection refused or reset, a restart, a
stalled server, a failover) are retried until --wait passes, also when Redis
is not up yet or not answering at the start; if Redis could not be reached
until then, it exits 1 — at most 3.25 s after --wait passed when the server
stops answering (its wait ends within 0.25 s, one last try takes up to 2 s,
and letting go of the connection up to 1 s; at the start, a connect attempt
gets what is left of --wait, at least 2 s). Errors no retry changes (a key
of another kind under NAME, a permit count out of range, NOPERM, a wrong
password) exit 1 at once, saying what is wrong.

On the way out (CMD exited, by itself or by a signal passed on), the release
and letting go of the connection take at most 1.25 s when the server stops
answering (1 s, and 0.25 s for the release to return); a hold not released
then expires within --lease.`

// runCmd is `redisync run`.
func runCmd(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("run", "run [flags] NAME -- CMD [ARGS...]", runAbout, stdout, stderr)
	f := addRunFlags(fs.FlagSet)
	fair := fs.Bool("fair", false, "use a fair (FIFO) lock instead of a reentrant one")
	if done, code := parseFlags(fs, args); done {
		return code
	}
	name, cmd, problem := nameAndCommand(fs)
	if problem != "" {
		return fail(stderr, "run", exitUsage, "%s", problem)
	}
	return f.under("run", name, cmd, stderr, func(c *redisync.Client) holdable {
		if *fair {
			return lockHold{fairlock.New(c, name)}
		}
		return lockHold{rlock.New(c, name)}
	}, nil)
}

// semCmd is `redisync sem run` and `redisync sem set-permits`.
func semCmd(args []string, stdout, stderr io.Writer) int {
	if len(args) > 0 && args[0] == "set-permits" {
		return setPermitsCmd(args[1:], stdout, stderr)
	}
	if len(args) == 0 || args[0] != "run" {
		if len(args) > 0 && (args[0] == "-h" || args[0] == "--help") {
			fmt.Fprintln(stdout, "usage: redisync sem run [flags] NAME -- CMD [ARGS...]\n       redisync sem set-permits [flags] NAME N\n\nrun 'redisync sem run --help' or 'redisync sem set-permits --help' for their flags")
			return 0
		}
		return fail(stderr, "sem", exitUsage, "want 'sem run' or 'sem set-permits' (see 'redisync sem --help')")
	}
	fs := newFlagSet("sem run", "sem run --permits N [flags] NAME -- CMD [ARGS...]", `
Like 'redisync run', with permits of the semaphore NAME instead of a lock:
at most N commands run at once across every machine that uses NAME.
--permits sets the capacity when the semaphore has none yet; when Redis
holds another capacity it is an error (exit 2), unless --set-permits, which
changes the capacity to N first (as 'redisync sem set-permits' does).
`+runAboutTail, stdout, stderr)
	f := addRunFlags(fs.FlagSet)
	permits := fs.Int("permits", 0, "the semaphore's capacity (required)")
	count := fs.Int("count", 1, "permits this command takes")
	setPermits := fs.Bool("set-permits", false, "change the stored capacity to --permits if it differs")
	if done, code := parseFlags(fs, args[1:]); done {
		return code
	}
	name, cmd, problem := nameAndCommand(fs)
	if problem != "" {
		return fail(stderr, "sem run", exitUsage, "%s", problem)
	}
	if *permits < 1 || *count < 1 {
		return fail(stderr, "sem run", exitUsage, "--permits and --count must be at least 1")
	}
	var sem *semaphore.Semaphore
	return f.under("sem run", name, cmd, stderr, func(c *redisync.Client) holdable {
		sem = semaphore.New(c, name, *permits)
		return &permitHold{sem: sem, n: *count}
	}, func(ctx context.Context) (int, string) {
		return checkCapacity(ctx, sem, name, *permits, *setPermits)
	})
}

// checkCapacity makes sure the semaphore's capacity in Redis is want: the
// first creator's capacity wins in Redis, so a differing --permits would
// otherwise be ignored without a word.
func checkCapacity(ctx context.Context, sem *semaphore.Semaphore, name string, want int, set bool) (int, string) {
	if set {
		if err := sem.SetPermits(ctx, want); err != nil {
			return exitError, fmt.Sprintf("set the capacity of %s: %v", printable(name), err)
		}
		return 0, ""
	}
	got, err := sem.Capacity(ctx)
	if err != nil {
		return exitError, fmt.Sprintf("read the capacity of %s: %v", printable(name), err)
	}
	if got != want {
		return exitUsage, fmt.Sprintf("%s has capacity %d in Redis, not --permits %d: add --set-permits to change it (or run 'redisync sem set-permits %s %d')",
			printable(name), got, want, printable(name), want)
	}
	return 0, ""
}

// setPermitsCmd is `redisync sem set-permits`.
func setPermitsCmd(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("sem set-permits", "sem set-permits [flags] NAME N", `
Changes the capacity of the semaphore NAME to N (N >= 0). Raising it lets
waiters in at once; lowering it revokes nothing: holders keep their permits
until they release them, and new requests wait until fewer than N are held.`, stdout, stderr)
	conn := addConnFlags(fs.FlagSet, false)
	if done, code := parseFlags(fs, args); done {
		return code
	}
	if fs.NArg() != 2 || fs.Arg(0) == "" || fs.dash {
		return fail(stderr, "sem set-permits", exitUsage, "want NAME N (see --help)")
	}
	name := fs.Arg(0)
	n, err := strconv.Atoi(fs.Arg(1))
	if err != nil || n < 0 {
		return fail(stderr, "sem set-permits", exitUsage, "N must be a whole number, 0 or more (got %s)", printable(fs.Arg(1)))
	}
	rc, _, closeRC, err := conn.connect(false)
	if err != nil {
		return fail(stderr, "sem set-permits", exitError, "%v", err)
	}
	defer closeRC()
	c := redisync.New(rc)
	defer c.Close()
	ctx, cancel := context.WithTimeout(context.Background(), connectTimeout)
	defer cancel()
	r, err := inspect(ctx, rc, name)
	if err != nil {
		return fail(stderr, "sem set-permits", exitError, "%v", err)
	}
	if r.Kind != "none" && r.Kind != "semaphore" {
		return fail(stderr, "sem set-permits", exitError, "%s is a %s, not a semaphore", printable(name), r.Kind)
	}
	sem := semaphore.New(c, name, max(n, 1))
	old := 0
	if r.Capacity != nil {
		old = int(*r.Capacity)
	}
	if err := sem.SetPermits(ctx, n); err != nil {
		return fail(stderr, "sem set-permits", exitError, "%v", err)
	}
	fmt.Fprintf(stdout, "%s: capacity %d (was %d)\n", printable(name), n, old)
	return 0
}

// forwarded are the signals passed on to the command (and that abandon a
// wait). SIGHUP is among them: a closed terminal or a `kill -HUP` must not
// leave the command running under a redisync that is gone.
var forwarded = []os.Signal{syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT}

// under acquires, runs cmd, and releases; it returns the exit status. check,
// if set, runs once connected, before the wait (sem run's capacity check).
func (f *runFlags) under(what, name string, cmd []string, stderr io.Writer, newHold func(*redisync.Client) holdable, check func(context.Context) (int, string)) int {
	if f.lease < redisync.MinLease || f.grace < 0 {
		return fail(stderr, what, exitUsage, "--lease must be at least %v (redisync.MinLease) and --grace not negative", redisync.MinLease)
	}
	if len(name) > rlock.MaxNameLength {
		return fail(stderr, what, exitUsage, "NAME is longer than %d bytes", rlock.MaxNameLength)
	}
	if err := redisync.CheckLabel(f.label); err != nil {
		return fail(stderr, what, exitUsage, "--label: %v", err)
	}
	sigs := make(chan os.Signal, 4)
	signal.Notify(sigs, forwarded...)
	defer signal.Stop(sigs)

	rc, closeRC, spent, code := f.connectWithin(what, stderr, sigs)
	if code >= 0 {
		return code
	}
	loss := &lossWatch{}
	c := redisync.New(rc, redisync.WithWatchdogTimeout(f.lease), redisync.WithObserver(loss), redisync.WithLabel(f.label))
	// The way out has exitCloseTimeout in all: once the release has begun,
	// letting go of the connection gets what the release left of it.
	var outBy time.Time
	defer func() {
		d := exitCloseTimeout
		if !outBy.IsZero() {
			d = time.Until(outBy)
		}
		closeWithin(d, func() { c.Close() }, closeRC)
	}()
	h := newHold(c)
	release := func() error {
		outBy = time.Now().Add(exitCloseTimeout)
		ctx, cancel := context.WithDeadline(context.Background(), outBy)
		defer cancel()
		return h.release(ctx) // within redisync.UndoWait of ctx's end
	}

	if check != nil {
		ctx, cancel := context.WithTimeout(context.Background(), connectTimeout)
		code, msg := check(ctx)
		cancel()
		if code != 0 {
			return fail(stderr, what, code, "%s", msg)
		}
	}
	w := &acquirer{what: what, name: name, wait: f.wait, spent: spent, verbose: f.verbose, rc: rc, h: h, stderr: stderr}
	code, sig := w.acquire(sigs)
	if code >= 0 {
		return code
	}
	if sig != nil { // a signal came as the hold was granted
		_ = release()
		return 128 + int(sig.(syscall.Signal))
	}

	code, lost := f.runCommand(cmd, h, sigs, stderr, what, func() string { return loss.reason(rc, name) })
	if err := release(); err != nil && !lost && !errorsIsLost(err) {
		fmt.Fprintf(stderr, "redisync %s: release %s: %s (it expires within --lease)\n", what, printable(name), controlsShown(err.Error()))
	}
	if lost {
		return fail(stderr, what, exitLost, "%s was lost while the command ran: it was terminated", printable(name))
	}
	return code
}

// commandEnv is the command's environment: ours without the connection
// variables (unless --pass-env), plus the fencing token if asked.
func (f *runFlags) commandEnv(token uint64) []string {
	var env []string
	for _, kv := range os.Environ() {
		k, _, _ := strings.Cut(kv, "=")
		if !f.passEnv && (k == envURL || k == envUser || k == envPassword || strings.HasPrefix(k, envPrefix)) {
			continue
		}
		env = append(env, kv)
	}
	if f.fenceEnv != "" {
		env = append(env, f.fenceEnv+"="+strconv.FormatUint(token, 10))
	}
	return env
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
