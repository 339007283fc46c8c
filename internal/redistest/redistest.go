// Package redistest starts real redis-server processes for tests: free
// loopback ports, one temp dir each, ready when the port answers with the
// started process's id (INFO server), stopped by t.Cleanup. Servers run without persistence, so Restart is an amnesic
// restart (the data is gone), and with the DEBUG command enabled for local
// connections. Fault controls: Kill, Restart, Pause and Resume. StartCluster
// forms a Redis Cluster (with redis-cli --cluster create) and StartSentinel a
// master, a replica and Sentinels.
package redistest

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/redis/rueidis"
)

// Binary is the server executable looked up on PATH.
const Binary = "redis-server"

// startTimeout bounds how long a server may take to answer.
const startTimeout = 10 * time.Second

// Server is one redis-server process.
type Server struct {
	t    testing.TB
	dir  string
	port int
	// extra arguments after the defaults (cluster mode, replicaof); for a
	// Sentinel, sentinel is true and extra is the config file's lines.
	extra    []string
	sentinel bool
	// env is added to the process's environment (clockshift.go's shim).
	env []string

	mu     sync.Mutex
	proc   *os.Process // nil when not running
	exited chan error  // receives the process's exit
}

// Start starts one server.
func Start(t testing.TB) *Server {
	t.Helper()
	return StartN(t, 1)[0]
}

// StartN starts n independent servers.
func StartN(t testing.TB, n int) []*Server {
	t.Helper()
	return startWith(t, n, func(int, *Server) {})
}

// startWith starts n servers, letting setup set each one's arguments.
func startWith(t testing.TB, n int, setup func(i int, s *Server)) []*Server {
	t.Helper()
	if _, err := exec.LookPath(Binary); err != nil {
		t.Fatalf("redistest: %s not found on PATH: install it (Debian/Ubuntu: sudo apt-get install -y redis-server; or run `make test`, which installs it)", Binary)
	}
	out := make([]*Server, n)
	for i := range out {
		s := &Server{t: t, dir: t.TempDir()}
		var err error
		for range 5 { // a port can be taken between probe and bind: retry
			if s.port, err = freePort(); err != nil {
				continue
			}
			setup(i, s)
			if err = s.launch(); err == nil {
				break
			}
		}
		if err != nil {
			t.Fatalf("redistest: start redis-server: %v", err)
		}
		t.Cleanup(s.Kill)
		out[i] = s
	}
	return out
}

// Addr returns "127.0.0.1:port".
func (s *Server) Addr() string { return "127.0.0.1:" + strconv.Itoa(s.port) }

// Log returns the server's log file so far (every life of a restarted
// server), for a failing test to show what the server did and when.
func (s *Server) Log() string {
	b, err := os.ReadFile(s.dir + "/redis.log")
	if err != nil {
		return err.Error()
	}
	return string(b)
}

// Client returns a rueidis client for this server alone (also when it is a
// Cluster node: commands go to this node, never redirected), closed by
// t.Cleanup.
func (s *Server) Client(t testing.TB) rueidis.Client {
	t.Helper()
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{s.Addr()}, DisableCache: true, ForceSingleClient: true})
	if err != nil {
		t.Fatalf("redistest: connect to %s: %v", s.Addr(), err)
	}
	t.Cleanup(c.Close)
	return c
}

// OneConnClient is Client with a single pipelining connection, open when
// it returns. A test that stops the server (Pause) with a call in flight
// needs it: with several, rueidis opens one lazily for the command that
// draws it, and one first opened to the stopped server waits in its
// handshake, which watches no ctx, for the dial timeout (5 s) — a call
// that ctx and Close cannot reach, whatever the test is about.
func (s *Server) OneConnClient(t testing.TB) rueidis.Client {
	t.Helper()
	c, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{s.Addr()}, DisableCache: true,
		ForceSingleClient: true, PipelineMultiplex: -1})
	if err != nil {
		t.Fatalf("redistest: connect to %s: %v", s.Addr(), err)
	}
	t.Cleanup(c.Close)
	return c
}

// Kill stops the server with SIGKILL and waits for it. Idempotent.
func (s *Server) Kill() {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc == nil {
		return
	}
	_ = s.proc.Signal(syscall.SIGCONT) // a paused process must be able to die
	_ = s.proc.Kill()
	<-s.exited
	s.proc = nil
}

// Restart kills the server and starts a new one on the same port. Nothing
// persists, so the new server starts empty (with an empty script cache).
func (s *Server) Restart() {
	s.t.Helper()
	if err := s.RestartMain(); err != nil {
		s.t.Fatalf("redistest: %v", err)
	}
}

// RestartMain is Restart for a server from StartMain (no test to fail).
func (s *Server) RestartMain() error {
	s.Kill()
	var err error
	for range 50 { // the old socket may linger for a moment
		if err = s.launch(); err == nil {
			return nil
		}
		time.Sleep(20 * time.Millisecond)
	}
	return fmt.Errorf("restart on port %d: %v", s.port, err)
}

// Close kills the server and, for one from StartMain (no test owns its
// directory), removes its directory. Idempotent.
func (s *Server) Close() {
	s.Kill()
	if s.t == nil {
		_ = os.RemoveAll(s.dir)
	}
}

// Pause stops the process (SIGSTOP): connections stay open, nothing answers,
// and the server's clock keeps running, so leases expire at resume.
func (s *Server) Pause() { s.signal(syscall.SIGSTOP) }

// Resume continues a paused server (SIGCONT).
func (s *Server) Resume() { s.signal(syscall.SIGCONT) }

func (s *Server) signal(sig syscall.Signal) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.proc != nil {
		_ = s.proc.Signal(sig)
	}
}

func (s *Server) launch() error {
	args := []string{
		"--port", strconv.Itoa(s.port),
		"--bind", "127.0.0.1",
		"--dir", s.dir,
		"--save", "",
		"--appendonly", "no",
		"--enable-debug-command", "local",
		"--daemonize", "no",
		"--logfile", s.dir + "/redis.log",
	}
	args = append(args, s.extra...)
	if s.sentinel {
		// A Sentinel rewrites its config file, so it needs one of its own.
		conf := fmt.Sprintf("port %d\nbind 127.0.0.1\ndir %s\nlogfile %s/redis.log\n%s\n",
			s.port, s.dir, s.dir, strings.Join(s.extra, "\n"))
		path := s.dir + "/sentinel.conf"
		if _, err := os.Stat(path); err != nil {
			if err := os.WriteFile(path, []byte(conf), 0o600); err != nil {
				return err
			}
		}
		args = []string{path, "--sentinel"}
	}
	cmd := exec.Command(Binary, args...)
	if len(s.env) > 0 {
		cmd.Env = append(os.Environ(), s.env...)
	}
	if err := cmd.Start(); err != nil {
		return err
	}
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	deadline := time.Now().Add(startTimeout)
	for time.Now().Before(deadline) {
		select {
		case err := <-exited:
			logTail, _ := os.ReadFile(s.dir + "/redis.log")
			return fmt.Errorf("redis-server exited: %v: %s", err, lastLines(string(logTail), 5))
		default:
		}
		if serves(s.Addr(), cmd.Process.Pid) {
			s.mu.Lock()
			s.proc, s.exited = cmd.Process, exited
			s.mu.Unlock()
			return nil
		}
		time.Sleep(10 * time.Millisecond)
	}
	_ = cmd.Process.Kill()
	<-exited
	return fmt.Errorf("redis-server on port %d did not answer within %v", s.port, startTimeout)
}

// serves reports whether the server answering at addr is the process pid,
// with a raw RESP exchange (INFO server's process_id) so no client library
// state is involved. A PONG alone is not enough: another test process can
// take the port between freePort and the bind, and then our server exits
// while theirs answers (a Cluster formed of a foreign server beside a
// second make test: "... is not configured as a cluster node").
func serves(addr string, pid int) bool {
	conn, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
	if err != nil {
		return false
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(500 * time.Millisecond))
	if _, err := conn.Write([]byte("INFO server\r\n")); err != nil {
		return false
	}
	r := bufio.NewReader(conn)
	head, err := r.ReadString('\n')
	if err != nil || !strings.HasPrefix(head, "$") {
		return false
	}
	n, err := strconv.Atoi(strings.TrimSpace(head[1:]))
	if err != nil || n < 0 {
		return false
	}
	body := make([]byte, n)
	if _, err := io.ReadFull(r, body); err != nil {
		return false
	}
	for _, line := range strings.Split(string(body), "\r\n") {
		if v, ok := strings.CutPrefix(line, "process_id:"); ok {
			return v == strconv.Itoa(pid)
		}
	}
	return false
}

func freePort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}

// Do runs one command on c and fails the test on an error other than nil;
// a shorthand for assertions on server state.
func Do(t testing.TB, c rueidis.Client, args ...string) rueidis.RedisResult {
	t.Helper()
	res := c.Do(context.Background(), c.B().Arbitrary(args...).Build())
	if err := res.Error(); err != nil && !rueidis.IsRedisNil(err) {
		t.Fatalf("redistest: %v: %v", args, err)
	}
	return res
}

// CommandCalls returns the number of calls of a command from INFO
// commandstats (for example "evalsha"), 0 if it was never called.
func CommandCalls(t testing.TB, c rueidis.Client, command string) int64 {
	t.Helper()
	info, err := Do(t, c, "INFO", "commandstats").ToString()
	if err != nil {
		t.Fatalf("redistest: INFO commandstats: %v", err)
	}
	return CommandStats(info)[strings.ToLower(command)]
}

// ScriptCalls returns the number of scripts the server ran: EVALSHA, EVAL
// (after a NOSCRIPT) and their read-only forms EVALSHA_RO and EVAL_RO, which
// the library's no-writes scripts go as (inspections, latch Count).
func ScriptCalls(t testing.TB, c rueidis.Client) int64 {
	t.Helper()
	info, err := Do(t, c, "INFO", "commandstats").ToString()
	if err != nil {
		t.Fatalf("redistest: INFO commandstats: %v", err)
	}
	stats := CommandStats(info)
	return stats["evalsha"] + stats["eval"] + stats["evalsha_ro"] + stats["eval_ro"]
}

// CommandStats parses the text of INFO commandstats into calls by command
// (lower case, subcommands as "config|set").
func CommandStats(info string) map[string]int64 {
	calls := map[string]int64{}
	for _, line := range strings.Split(info, "\n") {
		stat, ok := strings.CutPrefix(strings.TrimSpace(line), "cmdstat_")
		if !ok {
			continue
		}
		name, rest, ok := strings.Cut(stat, ":calls=")
		if !ok {
			continue
		}
		n, _ := strconv.ParseInt(rest[:strings.IndexByte(rest, ',')], 10, 64)
		calls[name] = n
	}
	return calls
}

// StartMain starts one server outside a test (for TestMain and Examples); the
// caller must Kill it, or Close it to remove its directory too.
func StartMain() (*Server, error) {
	if _, err := exec.LookPath(Binary); err != nil {
		return nil, fmt.Errorf("redistest: %s not found on PATH: install it (Debian/Ubuntu: sudo apt-get install -y redis-server; or run `make test`)", Binary)
	}
	dir, err := os.MkdirTemp("", "redistest-")
	if err != nil {
		return nil, err
	}
	s := &Server{dir: dir}
	for range 5 {
		if s.port, err = freePort(); err != nil {
			continue
		}
		if err = s.launch(); err == nil {
			return s, nil
		}
	}
	return nil, err
}
