// Command redisync is redisync's command-line tool: locks for shell
// scripts and cron jobs, and a look inside locks for operators.
//
//	redisync run [--wait D] [--lease D] [--fair] [--fence-env VAR] NAME -- CMD [ARGS...]
//	redisync sem run --permits N [--count K] [--set-permits] [...] NAME -- CMD [ARGS...]
//	redisync sem set-permits NAME N
//	redisync inspect [--json] NAME
//	redisync unlock --force [--yes] NAME
//	redisync demo [--workers N] [--locks K] [--duration D]
//
// run holds a lock while CMD runs and exits with CMD's status; sem run does
// the same with semaphore permits. inspect shows holders, leases, tokens and
// queues; unlock --force takes a lock away from a holder that is gone. demo
// runs workers contending for a few locks (on an embedded in-process Redis
// when no server is given). Every command takes --redis URL (or $REDIS_URL,
// or host:port), --user, --password, --password-file, --tls, --tls-ca,
// --cluster and --sentinel, and --help. Flags may stand anywhere before
// "--"; the command comes after it.
//
// Nothing the tool prints carries a password (user info in URLs shows as
// ***), and whatever came from Redis is printed with control characters
// escaped.
//
// The fault harness is a command of its own, redisync-torture
// (cmd/redisync-torture): this binary links neither it nor its test servers.
//
// Exit statuses: CMD's own (run, sem run); 1 error; 2 usage; 75 --wait
// passed with the lock held by others; 76 lock lost while CMD ran (CMD was
// terminated); 127 CMD cannot be started.
package main

import (
	"fmt"
	"io"
	"os"
	"runtime/debug"
)

const usage = `usage: redisync <command> [flags]

commands:
  run       hold a lock while a command runs:  redisync run NAME -- CMD [ARGS...]
  sem run   hold semaphore permits while a command runs
  sem set-permits
            change a semaphore's capacity
  inspect   show holders, leases, tokens and queues of a lock or semaphore
  unlock    force-unlock a lock whose holder is gone (--force)
  demo      workers contend for a few locks; prints acquisitions, hand-offs,
            wait percentiles and a fencing-token check

run 'redisync <command> --help' for a command's flags; --version for the version
(the fault harness is the command redisync-torture)

` + exitTable + "\n"

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

// run runs one invocation; everything it prints is redacted (redact.go),
// also the password of a URL given where no URL belongs.
func run(args []string, stdout, stderr io.Writer) int {
	addURLSecrets(args)
	stdout, stderr = redactor{stdout}, redactor{stderr}
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
		return tortureCmd(stderr)
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usage)
		return 0
	case "-version", "--version", "version":
		fmt.Fprintln(stdout, version())
		return 0
	default:
		fmt.Fprintf(stderr, "redisync: unknown command %s\n\n%s", printable(args[0]), usage)
		return 2
	}
}

// version says which build this is, from the module and VCS information the
// Go toolchain records in the binary.
func version() string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "redisync (no build information)"
	}
	v := "redisync " + bi.Main.Version
	var rev, modified string
	for _, s := range bi.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				modified = ", modified"
			}
		}
	}
	if rev != "" {
		v += " (" + rev[:min(12, len(rev))] + modified + ")"
	}
	return v + " " + bi.GoVersion
}
