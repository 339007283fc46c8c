// Command redisync is redisync's command-line tool.
//
//	redisync demo [--redis URL] [--workers N] [--locks K] [--duration D]
//
// demo runs workers contending for a few locks and reports acquisitions,
// hand-offs, wait times, and whether every fencing token rose. Without
// --redis it starts an embedded in-process Redis (miniredis), so it runs on a
// machine that has nothing but Go.
package main

import (
	"fmt"
	"io"
	"os"
)

const usage = `usage: redisync <command> [flags]

commands:
  demo    workers contend for a few locks; prints acquisitions, hand-offs,
          wait percentiles and a fencing-token check

run 'redisync <command> --help' for a command's flags
`

func main() {
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
	case "-h", "--help", "help":
		fmt.Fprint(stdout, usage)
		return 0
	default:
		fmt.Fprintf(stderr, "redisync: unknown command %q\n\n%s", args[0], usage)
		return 2
	}
}
