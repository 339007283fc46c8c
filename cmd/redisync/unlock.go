package main

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"strings"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/fairlock"
	"github.com/redisync/redisync/redlock"
	"github.com/redisync/redisync/rlock"
	"github.com/redisync/redisync/rwlock"
	"github.com/redisync/redisync/semaphore"
)

// stdin is where unlock reads its confirmation (a variable for tests).
var stdin io.Reader = os.Stdin

func unlockCmd(args []string, stdout, stderr io.Writer) int {
	fs := newFlagSet("unlock", "unlock --force [--yes] [flags] NAME", `
Deletes the lock NAME whoever holds it and wakes its waiters: every hold of
an rlock, fairlock or rwlock (readers and writer), every permit of a
semaphore (its capacity stays), or a Redlock's key on this server (run it
against each node). The former holders learn it at their next
renewal (their Done closes with ErrLockLost; 'redisync run' terminates its
command). It is for locks whose holder is gone for good: a live holder keeps
working without the lock. Asks for confirmation unless --yes. Gives up (exit
1) when Redis does not answer: at most 5 s to connect, 5 s for the rest, and
1 s to let go of the connection.`, stdout, stderr)
	conn := addConnFlags(fs.FlagSet, false)
	force := fs.Bool("force", false, "required: this takes the lock away from its holder")
	yes := fs.Bool("yes", false, "do not ask for confirmation")
	if done, code := parseFlags(fs, args); done {
		return code
	}
	name, ok := oneName(fs)
	if !ok {
		return fail(stderr, "unlock", exitUsage, "want exactly one NAME (see --help)")
	}
	if !*force {
		return fail(stderr, "unlock", exitUsage, "--force is required (a correct program releases its own locks)")
	}
	rc, _, closeRC, err := conn.connect(false)
	if err != nil {
		return fail(stderr, "unlock", exitError, "%v", err)
	}
	c := redisync.New(rc)
	defer closeWithin(exitCloseTimeout, func() { c.Close() }, closeRC)
	ctx, cancel := context.WithTimeout(context.Background(), connectTimeout)
	defer cancel()
	r, err := inspect(ctx, rc, name)
	if err != nil {
		return fail(stderr, "unlock", exitError, "%v", err)
	}
	if !r.Locked {
		fmt.Fprintf(stdout, "%s: nothing is held\n", printable(name))
		return 0
	}
	if !*yes {
		var who []string
		for _, h := range r.Holders {
			who = append(who, "  "+h.describe()) // owner ids and labels are anyone's choice: never raw
		}
		fmt.Fprintf(stderr, "%s (%s) is held by:\n%s\nForce-unlock it? [y/N] ", printable(name), r.Kind, strings.Join(who, "\n"))
		answer, _ := bufio.NewReader(stdin).ReadString('\n')
		if a := strings.ToLower(strings.TrimSpace(answer)); a != "y" && a != "yes" {
			fmt.Fprintln(stderr, "not unlocked")
			return exitError
		}
	}
	var did string
	switch r.Kind {
	case "semaphore":
		// The permits taken back are the ones the inspection saw (and the
		// prompt showed): ForceUnlock says only whether any was held.
		var held bool
		held, err = semaphore.New(c, name, 1).ForceUnlock(ctx)
		n := int64(0)
		if held {
			for _, h := range r.Holders {
				n += h.Count
			}
		}
		did = fmt.Sprintf("took back %d permits", n)
	case "rwlock":
		_, err = rwlock.New(c, name).ForceUnlock(ctx)
		did = "unlocked"
	case "fairlock":
		_, err = fairlock.New(c, name).ForceUnlock(ctx)
		did = "unlocked"
	case "redlock":
		_, err = redlock.New([]*redisync.Client{c}, name).ForceUnlock(ctx)
		did = "deleted this server's Redlock key"
	default:
		_, err = rlock.New(c, name).ForceUnlock(ctx)
		did = "unlocked"
	}
	if err != nil {
		return fail(stderr, "unlock", exitError, "%v", err)
	}
	fmt.Fprintf(stdout, "%s: %s\n", printable(name), did)
	return 0
}
