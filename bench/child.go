package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sync"
	"time"

	"github.com/go-redsync/redsync/v4"
	redsyncredis "github.com/go-redsync/redsync/v4/redis"
	"github.com/go-redsync/redsync/v4/redis/goredis/v9"
	goredislib "github.com/redis/go-redis/v9"
)

// childFlag makes the binary a second process in the cross-process
// hand-off: it runs one worker and prints its events as JSON.
const childFlag = "-handoff-child"

func child(args []string) int {
	fs := flag.NewFlagSet(childFlag, flag.ContinueOnError)
	name := fs.String("contender", "", "contender name")
	addr := fs.String("addr", "", "server")
	d := fs.Duration("duration", time.Second, "how long")
	if err := fs.Parse(args); err != nil {
		return 2
	}
	for _, c := range contenders() {
		if c.Name != *name {
			continue
		}
		newLocker, cleanup, err := c.open(*addr)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		defer cleanup()
		// Grants are told to the parent as "G" lines on stdout, and the
		// parent's arrive as lines on stdin.
		var outMu sync.Mutex
		tr := newTurns()
		tr.notify = func() { outMu.Lock(); fmt.Println("G"); outMu.Unlock() }
		go relay(os.Stdin, tr)
		events, err := handoffLoop(1, 1, *d, crossHold, tr, newLocker)
		if err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		b, _ := json.Marshal(events)
		outMu.Lock()
		fmt.Println(string(b))
		outMu.Unlock()
		return 0
	}
	fmt.Fprintln(os.Stderr, "unknown contender", *name)
	return 2
}

// crossHold is how long each process holds the lock in the cross-process
// hand-off.
const crossHold = 50 * time.Microsecond

// relay turns the other process's "G" lines into remote grants, and returns
// the last line that is not one (the child's events).
func relay(r io.Reader, tr *turns) string {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 64<<20)
	last := ""
	for sc.Scan() {
		if line := sc.Text(); line == "G" {
			tr.remote()
		} else {
			last = line
		}
	}
	return last
}

// crossProcess runs one worker here and one in a child process, each
// holding 50 µs and, after a release, waiting for the other to take the
// lock; it measures the hand-offs between the processes.
func (r *runner) crossProcess(c contender) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	if err := r.flush(); err != nil { // before the child starts: it holds locks
		return err
	}
	cmd := exec.Command(self, childFlag, "-contender", c.Name, "-addr", r.addr, "-duration", r.dur().String())
	cmd.Stderr = os.Stderr
	toChild, err := cmd.StdinPipe()
	if err != nil {
		return err
	}
	fromChild, err := cmd.StdoutPipe()
	if err != nil {
		return err
	}
	tr := newTurns()
	var toMu sync.Mutex
	tr.notify = func() { toMu.Lock(); fmt.Fprintln(toChild, "G"); toMu.Unlock() }
	if err := cmd.Start(); err != nil {
		return err
	}
	childEvents := make(chan string, 1)
	go func() { childEvents <- relay(fromChild, tr) }()
	var mine []event
	err = r.opened(c, func(newLocker func(string) locker) error {
		var err error
		mine, err = handoffLoop(0, 1, r.dur(), crossHold, tr, newLocker)
		return err
	})
	toMu.Lock()
	toChild.Close()
	toMu.Unlock()
	out := <-childEvents
	if werr := cmd.Wait(); werr != nil {
		return fmt.Errorf("child: %v", werr)
	}
	if err != nil {
		return err
	}
	var theirs []event
	if err := json.Unmarshal([]byte(out), &theirs); err != nil {
		return fmt.Errorf("child output: %v", err)
	}
	r.addHandoff("4 hand-off, across 2 processes", c.Name, handoffs(append(mine, theirs...), true))
	return nil
}

// redsyncOn is redsync over one go-redis client per node.
func redsyncOn(addrs []string) (*redsync.Redsync, func()) {
	var pools []redsyncredis.Pool
	var clients []*goredislib.Client
	for _, a := range addrs {
		cl := goredislib.NewClient(&goredislib.Options{Addr: a})
		clients = append(clients, cl)
		pools = append(pools, goredis.NewPool(cl))
	}
	return redsync.New(pools...), func() {
		for _, cl := range clients {
			cl.Close()
		}
	}
}
