package main

import (
	"context"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync/fairlock"
	"github.com/redisync/redisync/internal/locktest"
	"github.com/redisync/redisync/rlock"
	"github.com/redisync/redisync/semaphore"
)

// freezeProxy forwards TCP to target until Freeze: then it stops moving
// bytes either way and new connections are accepted but never forwarded —
// a network partition between its clients and the server (no RST, no FIN),
// while clients that dial the server directly go on. It is closed, and its
// goroutines awaited, by t.Cleanup.
type freezeProxy struct {
	l      net.Listener
	target string
	wg     sync.WaitGroup
	mu     sync.Mutex
	frozen bool
	thaw   chan struct{}
	conns  []net.Conn
}

func startFreezeProxy(t *testing.T, target string) *freezeProxy {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	p := &freezeProxy{l: l, target: target, thaw: make(chan struct{})}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(func() {
		p.l.Close()
		p.mu.Lock()
		if p.frozen {
			close(p.thaw)
			p.frozen = false
		}
		for _, c := range p.conns {
			c.Close()
		}
		p.mu.Unlock()
		p.wg.Wait()
	})
	return p
}

func (p *freezeProxy) Addr() string { return p.l.Addr().String() }

func (p *freezeProxy) Freeze() {
	p.mu.Lock()
	p.frozen = true
	p.mu.Unlock()
}

// wait blocks while the proxy is frozen.
func (p *freezeProxy) wait() {
	p.mu.Lock()
	f, ch := p.frozen, p.thaw
	p.mu.Unlock()
	if f {
		<-ch
	}
}

func (p *freezeProxy) accept() {
	defer p.wg.Done()
	for {
		down, err := p.l.Accept()
		if err != nil {
			return
		}
		up, err := net.Dial("tcp", p.target)
		if err != nil {
			down.Close()
			continue
		}
		p.mu.Lock()
		p.conns = append(p.conns, down, up)
		p.mu.Unlock()
		p.wg.Add(2)
		go p.pipe(up, down)
		go p.pipe(down, up)
	}
}

func (p *freezeProxy) pipe(dst, src net.Conn) {
	defer p.wg.Done()
	buf := make([]byte, 32<<10)
	for {
		p.wait()
		n, err := src.Read(buf)
		if n > 0 {
			p.wait() // bytes read during a freeze are held back
			if _, werr := dst.Write(buf[:n]); werr != nil {
				return
			}
		}
		if err != nil {
			dst.Close()
			return
		}
	}
}

// A run cut off from Redis by a partition (packets just stop, no RST) while
// its command runs: the library reports the loss before the lease runs out
// by the local clock, and the command must get its SIGTERM then — not after
// redisync has asked the unreachable Redis why — so that it has been told
// before another client can take the lock once the key expires on the
// server. The library's margin is its drift (1% of --lease + 2 ms): a
// 5 s lease leaves the SIGTERM and the shell's trap 52 ms; the rows run
// in parallel, each against its own server, as they mostly wait.
func TestRunTerminatesTheCommandBeforeAnotherClientCanTakeTheLostLock(t *testing.T) {
	for _, kind := range []string{"run", "run --fair", "sem run"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			partitionedRun(t, kind)
		})
	}
}

func partitionedRun(t *testing.T, kind string) {
	e := locktest.Setup(t)
	p := startFreezeProxy(t, e.Srv.Addr())
	dir := t.TempDir()
	started, term := filepath.Join(dir, "started"), filepath.Join(dir, "term")
	script := `trap 'date +%s%N > ` + term + `; exit 143' TERM; touch ` + started + `; while :; do sleep 0.05; done`
	args := []string{"--lease", "5s", "--grace", "1s", "part:run", "--", "sh", "-c", script}
	var other interface {
		TryLock(context.Context) (bool, error)
		Unlock(context.Context) error
	}
	switch kind {
	case "run":
		args = append([]string{"run"}, args...)
		other = rlock.New(e.C, "part:run")
	case "run --fair":
		args = append([]string{"run", "--fair"}, args...)
		other = fairlock.New(e.C, "part:run")
	case "sem run":
		args = append([]string{"sem", "run", "--permits", "1"}, args...)
		other = semaphore.New(e.C, "part:run", 1).Locker(1)
	}
	cmd := exec.Command(binary, args...)
	cmd.Env = append(os.Environ(), "REDIS_URL=redis://"+p.Addr())
	var errOut strings.Builder
	cmd.Stderr = &errOut
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	locktest.Eventually(t, 10*time.Second, func() bool { _, err := os.Stat(started); return err == nil }, "the command started")
	p.Freeze()
	frozeAt := time.Now()
	var gotAt time.Time
	for time.Since(frozeAt) < 15*time.Second {
		ok, err := other.TryLock(context.Background())
		require.NoError(t, err)
		if ok {
			gotAt = time.Now()
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	require.False(t, gotAt.IsZero(), "the other client never got the lock")
	defer func() { _ = other.Unlock(context.Background()) }()
	select {
	case <-exited:
	case <-time.After(20 * time.Second):
		_ = cmd.Process.Kill()
		<-exited
	}
	assert.Equal(t, exitLost, cmd.ProcessState.ExitCode(), errOut.String())
	b, err := os.ReadFile(term)
	require.NoError(t, err, "the command never got SIGTERM; stderr: %s", errOut.String())
	ns, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
	require.NoError(t, err)
	termAt := time.Unix(0, ns)
	t.Logf("froze at 0; the other client got the lock at %v; the command got SIGTERM at %v; stderr: %s",
		gotAt.Sub(frozeAt).Round(time.Millisecond), termAt.Sub(frozeAt).Round(time.Millisecond), errOut.String())
	assert.True(t, termAt.Before(gotAt), "the command still ran %v after another client took the lock", termAt.Sub(gotAt).Round(time.Millisecond))
	assert.Regexp(t, `lock lost while the command runs: (renewal could not reach Redis|Redis cannot be reached)`, errOut.String(), "the loss says why")
}
