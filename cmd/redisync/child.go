package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"os/signal"
	"runtime"
	"strconv"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

// stopPoll is how often runCommand looks whether the command is stopped
// (SIGTSTP, SIGTTIN, SIGTTOU), which cmd.Wait does not report.
const stopPoll = 500 * time.Millisecond

// runCommand starts cmd and waits for it, passing signals on, and
// terminating it if the hold ends. It returns cmd's exit status and whether
// the hold was lost; reason explains a loss, after the SIGTERM.
//
// The command must never outlive redisync, which is what keeps its lock:
//   - it runs in a process group of its own, so signals reach every process
//     of it and the terminal's job control treats it as one job;
//   - its parent-death signal is SIGKILL, so a redisync killed by anything,
//     even SIGKILL, takes the command with it. The kernel sends it when the
//     *thread* that forked the child exits, not the process, and the Go
//     runtime ends threads at will: the fork happens on a goroutine locked
//     to its thread, which stays locked (and alive) until the child is
//     reaped.
func (f *runFlags) runCommand(argv []string, h holdable, sigs <-chan os.Signal, stderr io.Writer, what string, reason func() string) (int, bool) {
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Env = f.commandEnv(h.token())
	attr := &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	tty := foregroundTTY()
	if tty >= 0 {
		// Interactive: the command gets the terminal, so it can read it
		// (otherwise it would be stopped by SIGTTIN) and ^C reaches it.
		attr.Foreground, attr.Ctty = true, tty
	}
	cmd.SysProcAttr = attr

	started, exited := make(chan error, 1), make(chan error, 1)
	go func() {
		runtime.LockOSThread() // never unlocked: the thread ends with the child
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		exited <- cmd.Wait()
	}()
	if err := <-started; err != nil {
		return fail(stderr, what, exitNoStart, "cannot start %s: %v", printable(argv[0]), err), false
	}
	if tty >= 0 {
		// redisync is now a background job of the terminal: with SIGTTOU
		// ignored (only after the fork: the command would inherit it) its
		// messages are not stopped by "stty tostop", and it can take the
		// terminal back for the shell's job at the end.
		signal.Ignore(syscall.SIGTTOU)
		defer func() { _ = unix.IoctlSetPointerInt(tty, unix.TIOCSPGRP, syscall.Getpgrp()) }()
	}
	pid := cmd.Process.Pid
	group := func(sig syscall.Signal) { _ = syscall.Kill(-pid, sig) }

	lostCh, lost := h.done(), false
	// why carries the loss's explanation, worked out after the SIGTERM: it
	// may ask Redis (lossInspectTimeout), and the command must not run on
	// meanwhile — another client may already hold the lock.
	var why chan string
	explained := func(r string) {
		fmt.Fprintf(stderr, "redisync %s: lock lost while the command runs: %s; sent SIGTERM\n", what, r)
	}
	var kill <-chan time.Time
	poll := time.NewTicker(stopPoll)
	defer poll.Stop()
	wasStopped := false
	for {
		select {
		case err := <-exited:
			if why != nil {
				explained(<-why)
			}
			return exitStatus(err), lost
		case sig := <-sigs:
			group(sig.(syscall.Signal))
			if wasStopped {
				group(syscall.SIGCONT) // a stopped command cannot act on it
			}
		case <-lostCh:
			lostCh, lost = nil, true
			group(syscall.SIGTERM)
			group(syscall.SIGCONT)
			kill = time.After(f.grace)
			why = make(chan string, 1)
			go func() { why <- reason() }() // awaited here or at the command's exit
		case r := <-why:
			why = nil
			explained(r)
		case <-kill:
			group(syscall.SIGKILL)
		case <-poll.C:
			stopped := isStopped(pid)
			if stopped && !wasStopped {
				fmt.Fprintf(stderr, "redisync %s: the command (pid %d) is stopped — by SIGTTIN/SIGTTOU if it used the terminal from the background, or by SIGSTOP/SIGTSTP — and keeps the lock while stopped; resume it with 'kill -CONT -%d' or end it with 'kill -TERM -%d'\n", what, pid, pid, pid)
			}
			wasStopped = stopped
		}
	}
}

// foregroundTTY returns the descriptor of our controlling terminal if
// redisync runs in its foreground process group (an interactive shell's
// foreground job), else -1 (cron, pipes, background jobs).
func foregroundTTY() int {
	fd := int(os.Stdin.Fd())
	pgrp, err := unix.IoctlGetInt(fd, unix.TIOCGPGRP)
	if err != nil || pgrp != syscall.Getpgrp() {
		return -1
	}
	return fd
}

// isStopped reports whether process pid is stopped (state T in /proc).
func isStopped(pid int) bool {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return false
	}
	// pid (comm) state ...: comm may hold anything, so look after its last ')'.
	i := bytes.LastIndexByte(b, ')')
	return i >= 0 && i+2 < len(b) && b[i+2] == 'T'
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
