// Command redisync is redisync's command-line tool: locks for shell
// scripts and cron jobs, and a look inside locks for operators.
//
//	redisync run [--wait D] [--lease D] [--fair] [--fence-env VAR] NAME -- CMD [ARGS...]
//	redisync sem run --permits N [--count K] [...] NAME -- CMD [ARGS...]
//	redisync inspect [--json] NAME
//	redisync unlock --force [--yes] NAME
//	redisync demo [--workers N] [--locks K] [--duration D]
//	redisync torture [--scenario S] [--duration D] [--seed N] [--json F] [--events F]
//
// run holds a lock while CMD runs and exits with CMD's status; sem run does
// the same with semaphore permits. inspect shows holders, leases, tokens and
// queues; unlock --force takes a lock away from a holder that is gone. demo
// runs workers contending for a few locks (on an embedded in-process Redis
// when no server is given). Every command takes --redis URL (or $REDIS_URL),
// --user, --password, --tls, --tls-ca, --cluster and --sentinel, and --help.
//
// Exit statuses: CMD's own (run, sem run); 1 error; 2 usage; 75 not
// acquired within --wait; 76 lock lost while CMD ran (CMD was terminated);
// 127 CMD cannot be started.
package main

import (
	"fmt"
	"io"
	"os"

	"github.com/redisync/redisync/internal/torture"
)

const usage = `usage: redisync <command> [flags]

commands:
  run       hold a lock while a command runs:  redisync run NAME -- CMD [ARGS...]
  sem run   hold semaphore permits while a command runs
  inspect   show holders, leases, tokens and queues of a lock or semaphore
  unlock    force-unlock a lock whose holder is gone (--force)
  demo      workers contend for a few locks; prints acquisitions, hand-offs,
            wait percentiles and a fencing-token check
  torture   the fault harness: workload, nemesis, fenced resource, oracles

run 'redisync <command> --help' for a command's flags
`

func main() {
	if torture.IsChild() { // a worker process of `redisync torture --processes`
		os.Exit(torture.ChildMain(os.Stdout))
	}
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 {
		fmt.Fprint(stderr, usage)
		return 2
	}
	switch args[0] {
	case "demo":
		return demo(args[1:], stdout, stderr)
	case "run":
		return runCmd(args[1:], stdout, stderr)
	case "sem":
		return semCmd(args[1:], stdout, stderr)
	case "inspect":
		return inspectCmd(args[1:], stdout, stderr)
	case "unlock":
		return unlockCmd(args[1:], stdout, stderr)
	case "torture":
		return tortureCmd(args[1:], stdout, stderr)
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "redisync: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
}
