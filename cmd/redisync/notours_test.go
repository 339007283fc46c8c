package main

import "testing"

// TestNotOursTellsLayoutsFromData: inspect's recognition is the library's
// (engine.LockShape) plus a semaphore's configuration.
func TestNotOursTellsLayoutsFromData(t *testing.T) {
	for _, tc := range []struct {
		h    map[string]string
		pttl int64
		ours bool
	}{
		{map[string]string{"owner:1": "2", "redisync:token": "17"}, 5000, true},     // a lock
		{map[string]string{"mode": "read", "owner:1": "1"}, 5000, true},             // an rwlock
		{map[string]string{"capacity": "5", "token": "3"}, -1, true},                // a semaphore's configuration
		{map[string]string{"capacity": "0"}, -1, true},                              // one without permits
		{map[string]string{"capacity": "five"}, -1, false},                          // no count for capacity
		{map[string]string{"capacity": "12345678901234567"}, -1, false},             // too long a count
		{map[string]string{"owner:1": "1"}, -1, false},                              // a lock hash without expiry
		{map[string]string{"mode": "exclusive", "owner:1": "1"}, 5000, false},       // no mode of ours
		{map[string]string{"name": "Ann", "email": "ann@example.com"}, 5000, false}, // data with a TTL
	} {
		why := notOurs(tc.h, tc.pttl)
		if (why == "") != tc.ours {
			t.Errorf("notOurs(%v, %d) = %q, want ours=%v", tc.h, tc.pttl, why, tc.ours)
		}
	}
}
