package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"time"

	"github.com/redis/rueidis"
)

// callgrindServer is a redis-server run under valgrind's callgrind tool,
// which counts the instructions it executes; the count is written when the
// server exits.
type callgrindServer struct {
	addr, out string
	cmd       *exec.Cmd
	exited    chan error
	dumps     int // dumps so far: the n-th goes to out.n
}

// valgrindMissing says why the cost scenario cannot run here ("": it can).
func valgrindMissing() string {
	if _, err := exec.LookPath("valgrind"); err != nil {
		return "valgrind is missing (Debian: sudo apt-get install -y valgrind)"
	}
	return ""
}

// startCallgrind starts a server under callgrind in dir. hz 1 keeps the
// server's own timer work (serverCron) small beside the operations
// measured; nothing is persisted.
func startCallgrind(dir string) (*callgrindServer, error) {
	port, err := freeTCPPort()
	if err != nil {
		return nil, err
	}
	s := &callgrindServer{addr: "127.0.0.1:" + strconv.Itoa(port), out: filepath.Join(dir, "callgrind.out"), exited: make(chan error, 1)}
	s.cmd = exec.Command("valgrind", "--tool=callgrind", "--dump-instr=no", "--callgrind-out-file="+s.out,
		"redis-server", "--port", strconv.Itoa(port), "--bind", "127.0.0.1", "--dir", dir,
		"--save", "", "--appendonly", "no", "--hz", "1", "--daemonize", "no",
		"--logfile", filepath.Join(dir, "redis.log"))
	s.cmd.Stderr, _ = os.Create(filepath.Join(dir, "valgrind.log"))
	if err := s.cmd.Start(); err != nil {
		return nil, err
	}
	go func() { s.exited <- s.cmd.Wait() }()
	deadline := time.Now().Add(time.Minute)
	for time.Now().Before(deadline) {
		select {
		case err := <-s.exited:
			return nil, fmt.Errorf("redis-server under callgrind exited: %v (see %s)", err, dir)
		default:
		}
		if pong(s.addr) {
			return s, nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	_ = s.cmd.Process.Kill()
	<-s.exited
	return nil, fmt.Errorf("redis-server under callgrind did not answer within a minute (see %s)", dir)
}

// stop shuts the server down and returns the instructions it executed in
// its whole life.
func (s *callgrindServer) stop() (int64, error) {
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{s.addr}, DisableCache: true})
	if err == nil {
		_ = rc.Do(context.Background(), rc.B().Shutdown().Nosave().Build()).Error() // the connection closes: no reply
		rc.Close()
	}
	select {
	case <-s.exited:
	case <-time.After(2 * time.Minute):
		_ = s.cmd.Process.Kill()
		<-s.exited
		return 0, errors.New("redis-server under callgrind did not exit after SHUTDOWN")
	}
	return instructions(s.out)
}

// zero resets the server's counters (callgrind_control, which reaches the
// process through vgdb: it needs ptrace).
func (s *callgrindServer) zero() error { return s.control("-z") }

// dump returns the instructions the server executed since the last zero or
// dump (a dump resets the counters too).
func (s *callgrindServer) dump() (int64, error) {
	s.dumps++
	if err := s.control("-d"); err != nil {
		return 0, err
	}
	return instructions(s.out + "." + strconv.Itoa(s.dumps))
}

func (s *callgrindServer) control(flag string) error {
	out, err := exec.Command("callgrind_control", flag, strconv.Itoa(s.cmd.Process.Pid)).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "OK") {
		return fmt.Errorf("callgrind_control %s: %v: %s", flag, err, strings.TrimSpace(string(out)))
	}
	return nil
}

// instructions reads the total of a callgrind output file ("totals:", or
// "summary:" in older formats).
func instructions(path string) (int64, error) {
	f, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	var total int64 = -1
	for sc.Scan() {
		line := sc.Text()
		for _, prefix := range []string{"totals:", "summary:"} {
			if rest, ok := strings.CutPrefix(line, prefix); ok {
				n, err := strconv.ParseInt(strings.Fields(rest)[0], 10, 64)
				if err != nil {
					return 0, fmt.Errorf("%s: %w", path, err)
				}
				total = n
			}
		}
	}
	if total < 0 {
		return 0, fmt.Errorf("%s: no totals line", path)
	}
	return total, sc.Err()
}

func pong(addr string) bool {
	conn, err := net.DialTimeout("tcp", addr, 200*time.Millisecond)
	if err != nil {
		return false
	}
	defer conn.Close()
	_ = conn.SetDeadline(time.Now().Add(2 * time.Second))
	if _, err := conn.Write([]byte("PING\r\n")); err != nil {
		return false
	}
	b := make([]byte, 7)
	n, _ := conn.Read(b)
	return strings.HasPrefix(string(b[:n]), "+PONG")
}

func freeTCPPort() (int, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

func execOutput(name string, args ...string) (string, error) {
	out, err := exec.Command(name, args...).Output()
	return string(out), err
}
