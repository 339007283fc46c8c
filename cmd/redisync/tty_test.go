package main

import (
	"bytes"
	"fmt"
	"os"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/sys/unix"

	"github.com/redisync/redisync/internal/locktest"
)

// openPTY returns a new pseudo-terminal's master and slave.
func openPTY(t *testing.T) (master, slave *os.File) {
	t.Helper()
	master, err := os.OpenFile("/dev/ptmx", os.O_RDWR|syscall.O_NOCTTY, 0)
	if err != nil {
		t.Skipf("no pseudo-terminals here: %v", err)
	}
	fd := int(master.Fd())
	require.NoError(t, unix.IoctlSetPointerInt(fd, unix.TIOCSPTLCK, 0))
	n, err := unix.IoctlGetInt(fd, unix.TIOCGPTN)
	require.NoError(t, err)
	slave, err = os.OpenFile(fmt.Sprintf("/dev/pts/%d", n), os.O_RDWR|syscall.O_NOCTTY, 0)
	require.NoError(t, err)
	return master, slave
}

// Run from an interactive terminal (redisync in its foreground), the
// command gets the terminal: it can read it, instead of being stopped by
// SIGTTIN while redisync renews the lock forever.
func TestRunGivesTheCommandTheTerminal(t *testing.T) {
	e := locktest.Setup(t)
	master, slave := openPTY(t)
	cmd := command(e, "run", "job:tty", "--", "sh", "-c", `read line; echo "got:$line"`)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = slave, slave, slave
	// A session of its own with the pty as controlling terminal: redisync
	// is the foreground job, as under an interactive shell.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true, Setctty: true, Ctty: 0}
	require.NoError(t, cmd.Start())
	slave.Close()
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()

	var mu sync.Mutex
	var screen bytes.Buffer
	readerDone := make(chan struct{})
	go func() {
		defer close(readerDone)
		buf := make([]byte, 1024)
		for {
			n, err := master.Read(buf)
			mu.Lock()
			screen.Write(buf[:n])
			mu.Unlock()
			if err != nil {
				return
			}
		}
	}()
	shown := func() string { mu.Lock(); defer mu.Unlock(); return screen.String() }
	locktest.Eventually(t, 10*time.Second, func() bool { return e.Exists(t, "job:tty") }, "lock taken")
	time.Sleep(300 * time.Millisecond) // the command reads
	_, err := master.Write([]byte("hello\n"))
	require.NoError(t, err)
	select {
	case err := <-exited:
		assert.NoError(t, err, shown())
	case <-time.After(10 * time.Second):
		_ = cmd.Process.Kill()
		<-exited
		_ = syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL)
		t.Errorf("the command never read the terminal (stopped by SIGTTIN?): %q", shown())
	}
	master.Close()
	<-readerDone
	assert.True(t, strings.Contains(shown(), "got:hello"), "%q", shown())
	assert.False(t, e.Exists(t, "job:tty"), "released")
}
