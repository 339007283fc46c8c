package main

import (
	"errors"
	"flag"
	"fmt"
	"io"
	"strings"
)

// Exit statuses of redisync itself; a command run under a lock exits with
// its own status, which redisync passes on.
const (
	exitError   = 1   // connection or Redis error, bad server state
	exitUsage   = 2   // bad flags or arguments
	exitBusy    = 75  // the lock (or permits) could not be had within --wait
	exitLost    = 76  // the lock was lost while the command ran; it was terminated
	exitNoStart = 127 // the command could not be started
)

// newFlagSet returns a flag set for a command. A bad flag prints one line
// to stderr; -h/--help prints the synopsis, the description and the flags to
// stdout (see parseFlags).
func newFlagSet(name, synopsis, about string, stdout, stderr io.Writer) *flagSet {
	fs := &flagSet{FlagSet: flag.NewFlagSet(name, flag.ContinueOnError)}
	fs.SetOutput(stderr)
	fs.Usage = func() {} // errors stay one line
	fs.help = func() {
		fs.SetOutput(stdout)
		fmt.Fprintf(stdout, "usage: redisync %s\n\n%s\n\nflags:\n", synopsis, strings.TrimSpace(about))
		fs.PrintDefaults()
		fs.SetOutput(stderr)
	}
	return fs
}

// flagSet is a command's flags and its --help text.
type flagSet struct {
	*flag.FlagSet
	help func()
}

// parseFlags parses args; done is true when the command should exit now
// with code (after --help, 0; after a bad flag, exitUsage — the flag package
// has printed the one-line error).
func parseFlags(fs *flagSet, args []string) (done bool, code int) {
	err := fs.Parse(args)
	switch {
	case errors.Is(err, flag.ErrHelp):
		fs.help()
		return true, 0
	case err != nil:
		return true, exitUsage
	}
	return false, 0
}

// fail prints one line, prefixed with the command's name, and returns code.
func fail(stderr io.Writer, cmd string, code int, format string, args ...any) int {
	fmt.Fprintf(stderr, "redisync %s: %s\n", cmd, fmt.Sprintf(format, args...))
	return code
}

// splitCommand takes "NAME [--] CMD [ARGS...]" apart.
func splitCommand(args []string) (name string, cmd []string, ok bool) {
	if len(args) < 2 {
		return "", nil, false
	}
	name, cmd = args[0], args[1:]
	if cmd[0] == "--" {
		cmd = cmd[1:]
	}
	return name, cmd, len(cmd) > 0 && name != ""
}
