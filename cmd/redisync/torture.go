package main

import (
	"fmt"
	"io"
)

// tortureMoved is what `redisync torture` says: the fault harness is the
// command redisync-torture (cmd/redisync-torture), so that this binary — the
// one installed for cron jobs — does not link the harness, and the demo
// compiles quickly on a cold cache.
const tortureMoved = "the fault harness is a command of its own: go run github.com/redisync/redisync/cmd/redisync-torture --help (in a checkout: go run ./cmd/redisync-torture --help)"

// tortureCmd tells scripts and fingers that still call `redisync torture`
// where the harness went; it runs nothing, whatever the flags.
func tortureCmd(stderr io.Writer) int {
	fmt.Fprintf(stderr, "redisync torture: %s\n", tortureMoved)
	return exitUsage
}
