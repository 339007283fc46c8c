// Package redisynctest starts a real redis-server for the tests and Examples
// of programs that use redisync.
//
// In a test, Start gives a server of the test's own, stopped when the test
// ends:
//
//	func TestNightlyJobRunsOnce(t *testing.T) {
//		c := redisynctest.Start(t).Client(t) // a *redisync.Client, closed at the end
//		mu := rlock.New(c, "jobs:nightly")
//		...
//	}
//
// Outside a test (an Example, a TestMain, a demo), StartServer returns one
// the caller closes:
//
//	srv, err := redisynctest.StartServer()
//	if err != nil { ... }
//	defer srv.Close()
//	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{srv.Addr()}, DisableCache: true})
//
// Requirements and limits:
//
//   - redis-server 7.0 or later on PATH (Debian/Ubuntu: apt-get install
//     redis-server). There is no in-process imitation: the tests see the real
//     server's scripts, expiry and pub/sub, which are what the locks rely on.
//   - Each server is a process of its own on a free port of 127.0.0.1 (a few
//     tens of milliseconds to start), with a temporary directory that Close
//     removes. Nothing persists (no RDB, no AOF): a server starts empty.
//   - The server listens on loopback without a password; it is for tests,
//     never for data that matters.
package redisynctest

import (
	"errors"
	"fmt"
	"os/exec"
	"sync"
	"testing"

	"github.com/redis/rueidis"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/redistest"
)

// errNoServer is returned when redis-server is not on PATH.
var errNoServer = errors.New("redisynctest: redis-server not found on PATH: install Redis 7.0 or later (Debian/Ubuntu: sudo apt-get install -y redis-server)")

// Server is one running redis-server. Its methods are safe for concurrent
// use.
type Server struct {
	srv   *redistest.Server
	close sync.Once
}

// Start starts a server for the test t and stops it, removing its files,
// when the test ends (t.Cleanup). It fails the test (t.Fatal) if the server
// cannot start, for example because redis-server is not on PATH.
func Start(t testing.TB) *Server {
	t.Helper()
	s, err := StartServer()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	return s
}

// StartServer starts a server outside of any test. The caller must Close it.
// It returns an error if redis-server is not on PATH or does not answer
// within a few seconds.
func StartServer() (*Server, error) {
	if _, err := exec.LookPath(redistest.Binary); err != nil {
		return nil, errNoServer
	}
	srv, err := redistest.StartMain()
	if err != nil {
		return nil, fmt.Errorf("redisynctest: start redis-server: %w", err)
	}
	return &Server{srv: srv}, nil
}

// Addr returns the server's address, "127.0.0.1:<port>".
func (s *Server) Addr() string { return s.srv.Addr() }

// RueidisClient returns a new rueidis client of the server, closed when t
// ends: the client to give redisync.New, or to look at the keys a lock
// leaves. Its client-side cache is off (DisableCache): redisync sends every
// command uncached, so the cache would only cost memory and a CLIENT
// TRACKING per connection.
func (s *Server) RueidisClient(t testing.TB) rueidis.Client {
	t.Helper()
	rc, err := rueidis.NewClient(rueidis.ClientOption{InitAddress: []string{s.Addr()}, DisableCache: true})
	if err != nil {
		t.Fatalf("redisynctest: connect to %s: %v", s.Addr(), err)
	}
	t.Cleanup(rc.Close)
	return rc
}

// Client returns a new redisync Client (one "process") on a new rueidis
// client of the server; both are closed when t ends, the Client first.
// Clients from separate calls have separate identities, as two processes
// would.
func (s *Server) Client(t testing.TB, opts ...redisync.Option) *redisync.Client {
	t.Helper()
	rc := s.RueidisClient(t)
	c := redisync.New(rc, opts...)
	t.Cleanup(func() { c.Close() }) // cleanups run last-in first-out: before rc.Close
	return c
}

// Close stops the server and removes its files. It is idempotent, and safe
// to call on a server from Start before the test ends.
func (s *Server) Close() { s.close.Do(s.srv.Close) }
