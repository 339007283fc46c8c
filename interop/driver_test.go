//go:build interop

package interop

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// answerTimeout bounds a query's answer (not a blocking lock's): a loaded
// two-core machine can stall a JVM for a second or two.
const answerTimeout = 20 * time.Second

// peer is one running driver process (Java Redisson or node-redisson).
type peer struct {
	name string // "redisson" or "node-redisson"
	id   string // the client id that starts every owner id of the process

	cmd   *exec.Cmd
	stdin io.WriteCloser
	done  chan struct{} // closed when the reader has seen the end of stdout

	mu      sync.Mutex
	next    int
	waiting map[string]chan answer
}

// answer is one reply line: OK with an optional result, or ERR.
type answer struct {
	ok     bool
	result string
}

// startPeer starts a driver and waits for its "0 OK <client id>" line.
func startPeer(name string, cmd *exec.Cmd) (*peer, error) {
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	cmd.Stderr = os.Stderr
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("interop: start %s driver: %w", name, err)
	}
	p := &peer{name: name, cmd: cmd, stdin: stdin, done: make(chan struct{}),
		waiting: map[string]chan answer{"0": make(chan answer, 1)}}
	ready := p.waiting["0"]
	go p.read(stdout)
	select {
	case a := <-ready:
		if !a.ok {
			p.stop()
			return nil, fmt.Errorf("interop: %s driver: %s", name, a.result)
		}
		p.id = a.result
		return p, nil
	case <-p.done:
		p.stop()
		return nil, fmt.Errorf("interop: %s driver exited before it was ready", name)
	case <-time.After(2 * time.Minute):
		p.stop()
		return nil, fmt.Errorf("interop: %s driver not ready after 2 minutes", name)
	}
}

// read dispatches reply lines until the driver closes its stdout.
func (p *peer) read(r io.Reader) {
	defer close(p.done)
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		id, rest, _ := strings.Cut(sc.Text(), " ")
		status, result, _ := strings.Cut(rest, " ")
		p.mu.Lock()
		ch := p.waiting[id]
		delete(p.waiting, id)
		p.mu.Unlock()
		if ch != nil {
			ch <- answer{ok: status == "OK", result: result}
		}
	}
}

// stop closes the driver's stdin (it shuts its client down and exits) and
// waits for it.
func (p *peer) stop() {
	_ = p.stdin.Close()
	exited := make(chan struct{})
	go func() { _ = p.cmd.Wait(); close(exited) }()
	select {
	case <-exited:
	case <-time.After(30 * time.Second):
		_ = p.cmd.Process.Kill()
		<-exited
	}
	<-p.done
}

// send sends one request and returns the channel its answer arrives on.
func (p *peer) send(t *testing.T, args ...string) <-chan answer {
	t.Helper()
	ch := make(chan answer, 1)
	p.mu.Lock()
	p.next++
	id := strconv.Itoa(p.next)
	p.waiting[id] = ch
	_, err := io.WriteString(p.stdin, id+" "+strings.Join(args, " ")+"\n")
	p.mu.Unlock()
	if err != nil {
		t.Fatalf("interop: %s driver: send %v: %v", p.name, args, err)
	}
	return ch
}

// call sends a request and waits for its answer.
func (p *peer) call(t *testing.T, args ...string) answer {
	t.Helper()
	return p.await(t, p.send(t, args...), answerTimeout, args)
}

func (p *peer) await(t *testing.T, ch <-chan answer, within time.Duration, what any) answer {
	t.Helper()
	select {
	case a := <-ch:
		return a
	case <-time.After(within):
		t.Fatalf("interop: %s driver: no answer to %v within %v", p.name, what, within)
		return answer{}
	}
}

// mustOK calls and fails the test unless the answer is OK; it returns the result.
func (p *peer) mustOK(t *testing.T, args ...string) string {
	t.Helper()
	a := p.call(t, args...)
	if !a.ok {
		t.Fatalf("interop: %s %v: %s", p.name, args, a.result)
	}
	return a.result
}

// Helpers for the protocol's operations. kind: lock, read, write, fair.

func (p *peer) owner(tid string) string { return p.id + ":" + tid }

func (p *peer) lock(t *testing.T, kind, name, tid string, lease time.Duration) {
	t.Helper()
	p.mustOK(t, "lock", kind, name, tid, ms(lease))
}

func (p *peer) try(t *testing.T, kind, name, tid string) bool {
	t.Helper()
	return p.mustOK(t, "trylock", kind, name, tid, "0", "-1") == "true"
}

func (p *peer) unlock(t *testing.T, kind, name, tid string) answer {
	t.Helper()
	return p.call(t, "unlock", kind, name, tid)
}

func (p *peer) locked(t *testing.T, kind, name string) bool {
	t.Helper()
	return p.mustOK(t, "locked", kind, name) == "true"
}

// ms formats a lease for the protocol: -1 (watchdog) for 0.
func ms(d time.Duration) string {
	if d <= 0 {
		return "-1"
	}
	return strconv.FormatInt(d.Milliseconds(), 10)
}

// javaCommand returns the command that starts the Redisson driver, built by
// `make interop` (mvn package) into java/target.
func javaCommand(addr string) (*exec.Cmd, error) {
	cp, err := os.ReadFile(filepath.Join("java", "target", "classpath.txt"))
	if err != nil {
		return nil, fmt.Errorf("interop: the Java driver is not built (run `make interop`): %w", err)
	}
	classes := filepath.Join("java", "target", "classes")
	return exec.Command("java", "-cp", classes+string(os.PathListSeparator)+strings.TrimSpace(string(cp)),
		"io.redisync.interop.Driver", "redis://"+addr), nil
}

// nodeCommand returns the command that starts the node-redisson driver
// (its dependencies installed by `make interop`: npm ci).
func nodeCommand(port string) (*exec.Cmd, error) {
	if _, err := os.Stat(filepath.Join("node", "node_modules", "node-redisson")); err != nil {
		return nil, fmt.Errorf("interop: node-redisson is not installed (run `make interop`): %w", err)
	}
	return exec.Command("node", filepath.Join("node", "driver.js"), port), nil
}
