//go:build !redisync_noembed

package main

import (
	"crypto/sha1"
	"encoding/hex"
	"fmt"
	"strings"
	"sync"

	"github.com/alicebob/miniredis/v2"
	"github.com/alicebob/miniredis/v2/server"
	"github.com/redis/rueidis"
)

// The demo runs on an in-process miniredis when no server is given, so that
// `go run ./cmd/redisync demo` works on a machine without Redis. It is the
// largest thing this binary links (about a quarter of it, with its Lua
// interpreter); building with -tags redisync_noembed leaves it out
// (embedded_off.go), for a smaller binary whose demo needs --redis.

// embeddedDefault completes the demo's --redis default in --help.
const embeddedDefault = "an embedded in-process Redis"

func connectEmbedded() (rueidis.Client, string, func(), error) {
	mr := miniredis.NewMiniRedis()
	if err := mr.Start(); err != nil {
		return nil, "", nil, fmt.Errorf("start embedded redis: %v", err)
	}
	commentShebangs(mr)
	// miniredis speaks RESP2 only, has no client tracking, and answers
	// CLUSTER commands (which would make rueidis assume a Cluster).
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{mr.Addr()}, AlwaysRESP2: true, DisableCache: true, ForceSingleClient: true})
	if err != nil {
		mr.Close()
		return nil, "", nil, fmt.Errorf("connect to embedded redis: %v", err)
	}
	return rc, "embedded miniredis at " + mr.Addr(), func() { rc.Close(); mr.Close() }, nil
}

// commentShebangs makes miniredis accept Redis 7's script flags: the
// library's scripts begin with a shebang line ("#!lua", "#!lua
// flags=no-writes"; see internal/scripts), which miniredis's Lua does not
// read. The hook turns that line into a comment before miniredis sees a
// script (EVAL, EVAL_RO, SCRIPT LOAD), and sends an EVALSHA (EVALSHA_RO) of the script as written
// to the digest miniredis cached. (Out of memory, what the flags are for,
// does not happen there.)
func commentShebangs(mr *miniredis.Miniredis) {
	var mu sync.Mutex
	digests := map[string]string{} // digest as sent -> digest miniredis knows
	digest := func(s string) string {
		sum := sha1.Sum([]byte(s))
		return hex.EncodeToString(sum[:])
	}
	mr.Server().SetPreHook(func(_ *server.Peer, cmd string, args ...string) bool {
		at := -1
		switch {
		case (cmd == "EVAL" || cmd == "EVAL_RO") && len(args) > 0:
			at = 0
		case cmd == "SCRIPT" && len(args) > 1 && strings.EqualFold(args[0], "LOAD"):
			at = 1
		case (cmd == "EVALSHA" || cmd == "EVALSHA_RO") && len(args) > 0:
			mu.Lock()
			if d, ok := digests[strings.ToLower(args[0])]; ok {
				args[0] = d
			}
			mu.Unlock()
		}
		if at >= 0 && strings.HasPrefix(args[at], "#!") {
			commented := "--" + args[at][2:] // same lines, so errors name the same line
			mu.Lock()
			digests[digest(args[at])] = digest(commented)
			mu.Unlock()
			args[at] = commented
		}
		return false
	})
}
