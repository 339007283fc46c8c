//go:build !redisync_noembed

package main

import (
	"fmt"

	"github.com/alicebob/miniredis/v2"
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
	// miniredis speaks RESP2 only, has no client tracking, and answers
	// CLUSTER commands (which would make rueidis assume a Cluster).
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{mr.Addr()}, AlwaysRESP2: true, DisableCache: true, ForceSingleClient: true})
	if err != nil {
		mr.Close()
		return nil, "", nil, fmt.Errorf("connect to embedded redis: %v", err)
	}
	return rc, "embedded miniredis at " + mr.Addr(), func() { rc.Close(); mr.Close() }, nil
}
