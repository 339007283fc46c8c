package torture

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"syscall"
	"time"

	"github.com/redis/rueidis"
	"golang.org/x/sys/unix"

	"github.com/redisync/redisync/internal/engine"
)

// Child processes (Config.Child): each worker runs as a process of its own,
// so that a holder pause is SIGSTOP (every goroutine of it stops, its
// watchdog too, as in a long GC pause or a VM freeze) and a crash is SIGKILL
// (nothing runs after it: no release, no leaving a queue, no deferred
// clean-up). The child runs the same worker loop as an in-process worker
// and writes its holds as JSONL on stdout: an "enter" line when granted, a
// "hold" line when it let go, a "summary" line (its counters and what its
// Clients still had registered after Close) before it exits. The parent
// owns the proxies, the servers and the nemesis, and marks the holds a
// pause or a kill struck. Both sides read CLOCK_MONOTONIC, which all
// processes on a host share, so their times compare.

// childEnv carries a child's configuration (JSON) from the parent.
const childEnv = "REDISYNC_TORTURE_CHILD"

// IsChild reports whether this process was started as a torture child: its
// main must then call ChildMain and exit with its result.
func IsChild() bool { return os.Getenv(childEnv) != "" }

// childConfig is what a child worker is told.
type childConfig struct {
	Config      Config        `json:"config"`
	Worker      int           `json:"worker"`
	Incarnation int           `json:"incarnation"`
	Addrs       []string      `json:"addrs"` // its proxies, one per lock server
	Names       []string      `json:"names"`
	Start       time.Duration `json:"start"`    // the parent's monotonic start
	Deadline    time.Duration `json:"deadline"` // since Start: stop then
}

// summary is a child's last line.
type summary struct {
	Kind          string `json:"kind"` // "summary"
	Errors        int    `json:"errors"`
	Hangs         int    `json:"hangs"`
	Timeouts      int    `json:"timeouts"`
	Partial       int    `json:"partial"`
	Doubles       int    `json:"doubles"`
	Renewals      int    `json:"renewals"`      // registered after Close: a leak
	Subscriptions int    `json:"subscriptions"` // held after Close: a leak
}

// ChildMain runs one child worker as the environment describes and writes
// its events to out. It returns the process's exit status.
func ChildMain(out io.Writer) int {
	var cc childConfig
	if err := json.Unmarshal([]byte(os.Getenv(childEnv)), &cc); err != nil {
		fmt.Fprintln(os.Stderr, "torture child:", err)
		return 2
	}
	cfg := cc.Config
	bw := &syncWriter{w: out}
	r := &runState{cfg: cfg, start: cc.Start, child: true, events: bw, names: cc.Names}
	resRC, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{cfg.ResourceAddr}, DisableCache: true})
	if err != nil {
		fmt.Fprintln(os.Stderr, "torture child:", err)
		return 2
	}
	defer resRC.Close()
	r.res = resource{rc: resRC}
	w := &worker{r: r, id: cc.Worker, incarnation: cc.Incarnation, addrs: cc.Addrs}
	if err := w.boot(); err != nil {
		fmt.Fprintln(os.Stderr, "torture child:", err)
		return 2
	}
	ctx, cancel := context.WithTimeout(context.Background(), cc.Deadline-r.now())
	defer cancel()
	w.run(ctx)
	sum := summary{Kind: "summary", Errors: r.errors, Hangs: r.hangs, Timeouts: r.timeouts, Partial: r.partial, Doubles: r.doubles}
	w.mu.Lock()
	clients, rcs := w.clients, w.rcs
	w.mu.Unlock()
	for _, c := range clients {
		_ = c.Close()
		e := engine.FromClient(c)
		sum.Renewals += e.Watchdog.Len()
		sum.Subscriptions += e.Hub.Channels()
	}
	for _, rc := range rcs {
		rc.Close()
	}
	r.log(sum)
	return 0
}

// entered tells the parent, from a child, what a worker was just granted:
// if the process is killed inside the hold, the parent knows what it held.
func (r *runState) entered(worker int, names []string, mode, id string, call time.Duration) {
	if !r.child {
		return
	}
	r.log(map[string]any{"kind": "enter", "worker": worker, "names": names, "mode": mode, "id": id, "call_ns": call, "at_ns": r.now()})
}

// childProc is one running child of a worker.
type childProc struct {
	cmd    *exec.Cmd
	done   chan struct{} // closed when its output is read to the end and it exited
	mu     sync.Mutex
	enter  *hold // the hold it is in (from its last "enter"), nil when none
	paused []span
}

type span struct{ from, to time.Duration }

// runChildren runs the worker's child processes until ctx ends: one at a
// time, a new one after the nemesis kills one.
func (w *worker) runChildren(ctx context.Context) {
	r := w.r
	for ctx.Err() == nil {
		p, err := w.spawn(ctx)
		if err != nil {
			r.count(&r.errors)
			return
		}
		select {
		case <-p.done:
		case <-ctx.Done():
			// It stops by itself at the deadline; one that does not is
			// hung, and killed.
			select {
			case <-p.done:
			case <-time.After(2*r.cfg.Lease + 10*time.Second):
				r.count(&r.hangs)
				_ = p.cmd.Process.Kill()
				<-p.done
			}
		}
		w.incarnation++
	}
}

// spawn starts a child and a goroutine reading its events.
func (w *worker) spawn(ctx context.Context) (*childProc, error) {
	r := w.r
	deadline, _ := ctx.Deadline()
	cc := childConfig{Config: r.cfg, Worker: w.id, Incarnation: w.incarnation, Addrs: w.addrs, Names: r.names,
		Start: r.start, Deadline: r.now() + time.Until(deadline)}
	cc.Config.Child, cc.Config.Events = nil, nil
	env, err := json.Marshal(cc)
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(r.cfg.Child[0], r.cfg.Child[1:]...)
	cmd.Env = append(os.Environ(), childEnv+"="+string(env))
	cmd.Stderr = os.Stderr
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	p := &childProc{cmd: cmd, done: make(chan struct{})}
	w.mu.Lock()
	w.proc = p
	w.mu.Unlock()
	go func() { // awaited through p.done by runChildren
		defer close(p.done)
		w.readEvents(p, stdout)
		_ = cmd.Wait()
	}()
	return p, nil
}

// readEvents records a child's events until its stdout closes.
func (w *worker) readEvents(p *childProc, stdout io.Reader) {
	r := w.r
	sc := bufio.NewScanner(stdout)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		var ev struct {
			Kind string `json:"kind"`
		}
		line := sc.Bytes()
		if json.Unmarshal(line, &ev) != nil {
			continue
		}
		switch ev.Kind {
		case "enter":
			var e struct {
				Names []string      `json:"names"`
				Mode  string        `json:"mode"`
				ID    string        `json:"id"`
				Call  time.Duration `json:"call_ns"`
				At    time.Duration `json:"at_ns"`
			}
			_ = json.Unmarshal(line, &e)
			p.mu.Lock()
			p.enter = &hold{Kind: "hold", Names: e.Names, Mode: e.Mode, ID: e.ID, Worker: w.id, Call: e.Call, Enter: e.At}
			p.mu.Unlock()
		case "hold":
			var h hold
			if json.Unmarshal(line, &h) != nil {
				continue
			}
			p.mu.Lock()
			p.enter = nil
			for _, s := range p.paused {
				if s.from < h.Exit && s.to > h.Enter {
					h.Paused = true // SIGSTOPped inside the hold
				}
			}
			p.mu.Unlock()
			r.record(h)
		case "summary":
			var s summary
			_ = json.Unmarshal(line, &s)
			r.mu.Lock()
			r.errors += s.Errors
			r.hangs += s.Hangs
			r.timeouts += s.Timeouts
			r.partial += s.Partial
			r.doubles += s.Doubles
			r.childLeaks += s.Renewals + s.Subscriptions
			r.mu.Unlock()
		}
	}
}

// current returns the worker's running child.
func (w *worker) current() *childProc {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.proc
}

// holding reports whether the child is inside a hold.
func (p *childProc) holding() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.enter != nil
}

// sigkill crashes the child. A hold it was in ends now, crashed: it
// writes nothing more.
func (w *worker) sigkill(p *childProc) (names []string) {
	r := w.r
	_ = p.cmd.Process.Signal(syscall.SIGKILL)
	at := r.now()
	<-p.done // every line it wrote is read: a hold it left is recorded
	p.mu.Lock()
	h := p.enter
	p.enter = nil
	p.mu.Unlock()
	if h != nil {
		h.Crashed, h.Exit, h.Owner = true, at, fmt.Sprintf("w%d-killed", w.id)
		r.mu.Lock()
		r.crashes = append(r.crashes, crash{at: at, names: h.Names})
		r.mu.Unlock()
		r.watchReclaim(*h)
		r.record(*h)
		return h.Names
	}
	return nil
}

// sigstop pauses the child for d, then lets it go on.
func (w *worker) sigstop(ctx context.Context, p *childProc, d time.Duration) {
	r := w.r
	from := r.now()
	if p.cmd.Process.Signal(syscall.SIGSTOP) != nil {
		return
	}
	sleep(ctx, d)
	p.mu.Lock()
	p.paused = append(p.paused, span{from, r.now()})
	p.mu.Unlock()
	_ = p.cmd.Process.Signal(syscall.SIGCONT)
}

// monotime reads CLOCK_MONOTONIC, which every process on the host shares
// (Go's own monotonic readings cannot be compared across processes).
func monotime() time.Duration {
	var ts unix.Timespec
	_ = unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts)
	return time.Duration(ts.Nano())
}

// syncWriter serialises a child's event lines; each goes out at once (one
// write per line), so a kill loses no line that was written.
type syncWriter struct {
	mu sync.Mutex
	w  io.Writer
}

func (s *syncWriter) Write(b []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.Write(b)
}
