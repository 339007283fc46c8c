package redistest

import (
	"testing"
	"time"
)

// serverTime is the server's TIME.
func serverTime(t *testing.T, s *Server) time.Time {
	t.Helper()
	v, err := Do(t, s.Client(t), "TIME").AsStrSlice()
	if err != nil || len(v) != 2 {
		t.Fatalf("TIME: %v %v", v, err)
	}
	var sec, usec int64
	for i, p := range []*int64{&sec, &usec} {
		for _, c := range v[i] {
			*p = *p*10 + int64(c-'0')
		}
	}
	return time.Unix(sec, usec*1000)
}

// TestStartShiftedMovesTimeAndExpiry: TIME and key expiry follow the offset,
// also when it is stepped on the running server. Bounds: 2 s of slack around
// 1 h or 10 s steps, for a loaded machine.
func TestStartShiftedMovesTimeAndExpiry(t *testing.T) {
	s, clock := StartShifted(t, -time.Hour)
	near := func(got time.Time, want time.Duration) {
		t.Helper()
		if d := got.Sub(time.Now()) - want; d < -2*time.Second || d > 2*time.Second {
			t.Fatalf("server clock is %v from real time, want %v", got.Sub(time.Now()), want)
		}
	}
	near(serverTime(t, s), -time.Hour)
	clock.Step(time.Hour + 10*time.Second)
	near(serverTime(t, s), 10*time.Second)

	// An absolute expiry 5 s ahead of the server's clock: stepping it 10 s
	// forward expires the key.
	c := s.Client(t)
	Do(t, c, "SET", "k", "v", "PX", "5000")
	clock.Step(10 * time.Second)
	if n, _ := Do(t, c, "EXISTS", "k").AsInt64(); n != 0 {
		t.Fatal("key still there after the clock passed its expiry")
	}
	if clock.Offset() != 20*time.Second {
		t.Fatalf("offset %v, want 20s", clock.Offset())
	}
}
