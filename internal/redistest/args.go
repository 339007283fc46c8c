package redistest

import "testing"

// StartArgs starts one server with further redis-server arguments after the
// defaults (which they override: for example "--appendonly", "yes",
// "--appendfsync", "always"). Restart keeps the server's directory, so a
// server with persistence reloads its data.
func StartArgs(t testing.TB, extra ...string) *Server {
	t.Helper()
	return startWith(t, 1, func(_ int, s *Server) { s.extra = extra })[0]
}
