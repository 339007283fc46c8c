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
	exitError   = 1   // connection or Redis error (after --wait's retries), bad server state
	exitUsage   = 2   // bad flags or arguments
	exitBusy    = 75  // --wait passed and the lock (or permits) was still held by others
	exitLost    = 76  // the lock was lost while the command ran; it was terminated
	exitNoStart = 127 // the command could not be started
)

// exitTable is the table of exit statuses in --help (and in the README).
const exitTable = `exit statuses:
  0-255  run, sem run: the command's own (128+n if signal n ended it)
  1      error: bad server state, an error no retry changes, or Redis
         unreachable until --wait passed
  2      usage: bad flags or arguments
  75     busy: --wait passed and the lock (or permits) was held by others
  76     lost: the lock was lost while the command ran; it was terminated
  127    the command could not be started`

// newFlagSet returns a flag set for a command. A bad flag prints one line
// to stderr; -h/--help prints the synopsis, the description and the flags to
// stdout (see parseFlags).
func newFlagSet(name, synopsis, about string, stdout, stderr io.Writer) *flagSet {
	fs := &flagSet{FlagSet: flag.NewFlagSet(name, flag.ContinueOnError), name: name}
	fs.SetOutput(stderr)
	fs.Usage = func() {} // errors stay one line
	fs.help = func() {
		fs.SetOutput(stdout)
		fmt.Fprintf(stdout, "usage: redisync %s\n\n%s\n\nflags:\n", synopsis, strings.TrimSpace(about))
		fs.PrintDefaults()
		fmt.Fprintf(stdout, "\n%s\n", exitTable)
		fs.SetOutput(stderr)
	}
	return fs
}

// flagSet is a command's flags and its --help text.
type flagSet struct {
	*flag.FlagSet
	name string
	help func()
	rest []string // after parseFlags: the arguments after "--", if any
	dash bool     // after parseFlags: whether "--" was given
}

// parseFlags parses args; done is true when the command should exit now
// with code (after --help, 0; after a bad flag, exitUsage — the flag package
// has printed the one-line error).
//
// Flags may stand anywhere before "--", before or after the positional
// arguments (Go's flag package alone stops at the first positional one, so
// `run NAME --wait 0 -- cmd` would take --wait for the command). Everything
// after "--" is left alone, in fs.rest.
func parseFlags(fs *flagSet, args []string) (done bool, code int) {
	var flags, positional []string
	for i := 0; i < len(args); i++ {
		a := args[i]
		if a == "--" {
			fs.dash, fs.rest = true, args[i+1:]
			break
		}
		if len(a) < 2 || a[0] != '-' {
			positional = append(positional, a)
			continue
		}
		flags = append(flags, a)
		name := strings.TrimLeft(a, "-")
		if strings.Contains(name, "=") {
			continue
		}
		// A flag that takes a value takes the next argument, whatever it
		// looks like (as the flag package does).
		if f := fs.Lookup(name); f != nil && !isBool(f) && i+1 < len(args) {
			i++
			flags = append(flags, args[i])
		}
	}
	err := fs.Parse(append(flags, positional...))
	switch {
	case errors.Is(err, flag.ErrHelp):
		fs.help()
		return true, 0
	case err != nil:
		return true, exitUsage
	}
	return false, 0
}

func isBool(f *flag.Flag) bool {
	b, ok := f.Value.(interface{ IsBoolFlag() bool })
	return ok && b.IsBoolFlag()
}

// fail prints one line, prefixed with the command's name, and returns code.
func fail(stderr io.Writer, cmd string, code int, format string, args ...any) int {
	// Callers escape what they print from Redis (printable); controlsShown
	// is the last guard for what they could not foresee — a server's error
	// text, say — so the one line stays one line and obeys nothing.
	fmt.Fprintf(stderr, "redisync %s: %s\n", cmd, controlsShown(fmt.Sprintf(format, args...)))
	return code
}

// nameAndCommand checks "NAME -- CMD [ARGS...]" after parseFlags: exactly one
// positional argument before "--" and a command after it. "--" is required:
// without it the command's own flags could not be told from redisync's, and
// `run -- echo x` must not take a lock named echo.
func nameAndCommand(fs *flagSet) (name string, cmd []string, problem string) {
	pos := fs.Args()
	switch {
	case !fs.dash && len(pos) > 1:
		return "", nil, fmt.Sprintf("put -- between NAME and the command: redisync %s [flags] NAME -- CMD [ARGS...] (got %d arguments and no --)", fs.name, len(pos))
	case !fs.dash:
		return "", nil, "want NAME -- CMD [ARGS...] (see --help)"
	case len(pos) == 0:
		return "", nil, "NAME is missing before -- (want NAME -- CMD [ARGS...])"
	case len(pos) > 1:
		return "", nil, fmt.Sprintf("one NAME before --, got %d: %s", len(pos), printable(strings.Join(pos, " ")))
	case len(fs.rest) == 0 || fs.rest[0] == "":
		return "", nil, "the command is missing after -- (want NAME -- CMD [ARGS...])"
	case pos[0] == "":
		return "", nil, "NAME is empty"
	}
	return pos[0], fs.rest, ""
}

// oneName checks that exactly one NAME was given (inspect, unlock); a NAME
// that starts with '-' can follow "--".
func oneName(fs *flagSet) (string, bool) {
	names := append(fs.Args(), fs.rest...)
	if len(names) != 1 || names[0] == "" {
		return "", false
	}
	return names[0], true
}
