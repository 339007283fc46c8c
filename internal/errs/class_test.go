package errs_test

import (
	"context"
	"errors"
	"fmt"
	"net"
	"testing"
	"time"

	"github.com/redis/rueidis"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync/internal/errs"
	"github.com/redisync/redisync/internal/redistest"
)

// TestClassifyEveryKindOfError is the table of error kinds and their class,
// each error made by a real redis-server (or a real socket) where one can
// make it, and wrapped as the library wraps it (with %w, and inside a
// Join) to show the class survives the wrapping. Replies a standalone
// server never sends unprovoked (LOADING, MOVED, READONLY ...) come from a
// script's error_reply: Redis sends them as it sends its own.
func TestClassifyEveryKindOfError(t *testing.T) {
	srv := redistest.Start(t)
	rc := srv.Client(t)
	ctx := context.Background()
	do := func(args ...string) error {
		return rc.Do(ctx, rc.B().Arbitrary(args...).Build()).Error()
	}
	reply := func(msg string) error {
		return do("EVAL", fmt.Sprintf("return redis.error_reply(%q)", msg), "0")
	}
	require.NoError(t, do("SET", "str", "v"))

	cancelled, cancel := context.WithCancel(ctx)
	cancel()
	expired, cancel2 := context.WithTimeout(ctx, time.Nanosecond)
	defer cancel2()
	<-expired.Done()

	closedRC := srv.Client(t)
	closedRC.Close()

	// A port nobody listens on: a real connection refused.
	l, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	deadAddr := l.Addr().String()
	l.Close()
	_, refused := net.Dial("tcp", deadAddr)
	_, refusedRC := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{deadAddr}, DisableRetry: true})

	// A read that times out on a live connection.
	conn, err := net.Dial("tcp", srv.Addr())
	require.NoError(t, err)
	require.NoError(t, conn.SetReadDeadline(time.Now().Add(20*time.Millisecond)))
	_, timeout := conn.Read(make([]byte, 1))
	conn.Close()

	// A connection the server closes: EOF on the next read.
	conn, err = net.Dial("tcp", srv.Addr())
	require.NoError(t, err)
	require.NoError(t, do("CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes"))
	_, eof := conn.Read(make([]byte, 1))
	conn.Close()

	cases := []struct {
		kind string
		err  error
		want errs.Class
	}{
		{"busy (no error)", nil, errs.Busy},
		{"a package's busy sentinel", errs.New(errs.Busy, "redlock: node busy"), errs.Busy},
		{"a package's transient sentinel", errs.New(errs.Transient, "redlock: node did not answer in time"), errs.Transient},

		{"WRONGTYPE", do("HGET", "str", "f"), errs.Permanent},
		{"unknown command (ERR)", do("NOSUCHCOMMAND"), errs.Permanent},
		{"NOPERM", reply("NOPERM this user has no permissions to run the 'evalsha' command"), errs.Permanent},
		{"OOM", reply("OOM command not allowed when used memory > 'maxmemory'."), errs.Permanent},
		{"NOAUTH", reply("NOAUTH Authentication required."), errs.Permanent},
		{"WRONGPASS", reply("WRONGPASS invalid username-password pair or user is disabled."), errs.Permanent},
		{"wrong kind", &errs.WrongKindError{Key: "k", Found: "string"}, errs.Permanent},
		{"not replicated", fmt.Errorf("%w: 0 of 1 replicas within 100ms", errs.ErrNotReplicated), errs.Permanent},
		{"invalid name", errs.ErrInvalidName, errs.Permanent},
		{"non-reentrant", errs.ErrNonReentrant, errs.Permanent},
		{"a refusal of ours", errors.New("semaphore: permit count out of range"), errs.Permanent},

		{"NOSCRIPT", do("EVALSHA", "ffffffffffffffffffffffffffffffffffffffff", "0"), errs.Transient},
		{"LOADING", reply("LOADING Redis is loading the dataset in memory"), errs.Transient},
		{"BUSY", reply("BUSY Redis is busy running a script."), errs.Transient},
		{"READONLY", reply("READONLY You can't write against a read only replica."), errs.Transient},
		{"MOVED", reply("MOVED 3999 127.0.0.1:6381"), errs.Transient},
		{"ASK", reply("ASK 3999 127.0.0.1:6381"), errs.Transient},
		{"TRYAGAIN", reply("TRYAGAIN Multiple keys request during rehashing of slot"), errs.Transient},
		{"CLUSTERDOWN", reply("CLUSTERDOWN The cluster is down"), errs.Transient},
		{"MASTERDOWN", reply("MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'."), errs.Transient},
		{"NOREPLICAS", reply("NOREPLICAS Not enough good replicas to write."), errs.Transient},
		{"connection refused (dial)", refused, errs.Transient},
		{"connection refused (rueidis)", refusedRC, errs.Transient},
		{"read timeout", timeout, errs.Transient},
		{"EOF", eof, errs.Transient},

		{"ctx cancelled", rc.Do(cancelled, rc.B().Ping().Build()).Error(), errs.Permanent},
		{"ctx deadline", rc.Do(expired, rc.B().Ping().Build()).Error(), errs.Permanent},
		{"client closed (ours)", errs.ErrClosed, errs.Permanent},
		{"client closed (rueidis)", closedRC.Do(ctx, closedRC.B().Ping().Build()).Error(), errs.Permanent},
	}
	for _, c := range cases {
		t.Run(c.kind, func(t *testing.T) {
			if c.want != errs.Busy {
				require.Error(t, c.err, "the case made no error")
			}
			assert.Equal(t, c.want, errs.Classify(c.err), "%v", c.err)
			if c.err == nil {
				return
			}
			wrapped := fmt.Errorf("rlock %q: waiting for the lock: %w", "x", c.err)
			assert.Equal(t, c.want, errs.Classify(wrapped), "wrapped: %v", wrapped)
			assert.Equal(t, c.want, errs.Classify(errs.Join(c.err, errors.New("and then"))), "joined")
		})
	}
}
