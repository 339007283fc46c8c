package main

import (
	"testing"

	"github.com/stretchr/testify/assert"
)

// A hash without expiry whose capacity is no permit count is no semaphore's
// configuration, and inspect does not say it is one (it said "it is a
// semaphore's configuration" while refusing to show it as one).
func TestNotOursDoesNotCallABadCapacityASemaphore(t *testing.T) {
	for _, c := range []string{"five", "-1", "12345678901234567", ""} {
		why := notOurs(map[string]string{"capacity": c}, -1)
		assert.NotEqual(t, "", why, c)
		assert.NotContains(t, why, "semaphore's configuration", c)
		assert.Contains(t, why, "capacity", c)
	}
}
