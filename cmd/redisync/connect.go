package main

import (
	"context"
	"fmt"
	"time"

	"github.com/alicebob/miniredis/v2"
	"github.com/redis/rueidis"
)

// connectTimeout bounds the first contact with the server.
const connectTimeout = 5 * time.Second

// connect returns a rueidis client for url, or for an embedded miniredis when
// url is empty, and a function that closes both.
func connect(url string) (rueidis.Client, string, func(), error) {
	if url == "" {
		mr := miniredis.NewMiniRedis()
		if err := mr.Start(); err != nil {
			return nil, "", nil, fmt.Errorf("start embedded redis: %w", err)
		}
		// miniredis speaks RESP2 only, has no client tracking, and answers
		// CLUSTER commands (which would make rueidis assume a Cluster).
		rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{mr.Addr()}, AlwaysRESP2: true, DisableCache: true, ForceSingleClient: true})
		if err != nil {
			mr.Close()
			return nil, "", nil, fmt.Errorf("connect to embedded redis: %w", err)
		}
		return rc, "embedded miniredis at " + mr.Addr(), func() { rc.Close(); mr.Close() }, nil
	}
	opt, err := rueidis.ParseURL(url)
	if err != nil {
		return nil, "", nil, fmt.Errorf("bad --redis URL %q: %w (want redis://[user:pass@]host:port[/db])", url, err)
	}
	opt.Dialer.Timeout = connectTimeout
	opt.DisableRetry = false
	rc, err := rueidis.NewClient(opt)
	if err != nil {
		return nil, "", nil, fmt.Errorf("cannot reach Redis at %s: %w", url, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), connectTimeout)
	defer cancel()
	if err := rc.Do(ctx, rc.B().Ping().Build()).Error(); err != nil {
		rc.Close()
		return nil, "", nil, fmt.Errorf("cannot reach Redis at %s: %w", url, err)
	}
	return rc, url, rc.Close, nil
}
