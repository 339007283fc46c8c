package main

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"

	"github.com/redisync/redisync/internal/locktest"
)

// A lock whose lease runs out while inspect reads it is no lock of someone
// else's: its key was gone when PTTL came (-2), and inspect says what a
// missing key says (none), not that it is a hash or a string "without
// expiry" (inspect reads TYPE, the content and PTTL one after another).
func TestInspectOfALockExpiringMidReadIsNotForeignData(t *testing.T) {
	e := locktest.Setup(t)
	ctx := context.Background()
	var wrong []string
	for i := 0; i < 1000 && len(wrong) == 0; i++ {
		// A lease of 1 ms, and inspect up to 1.5 ms later: the lease runs
		// out within inspect's reads in some runs (a few round trips).
		if i%2 == 0 {
			e.Do(t, "HSET", "exp:lock", "owner:1", "1")
		} else {
			e.Do(t, "SET", "exp:lock", "owner:1:1")
		}
		e.Do(t, "PEXPIRE", "exp:lock", "1")
		time.Sleep(time.Duration(rand.IntN(1500)) * time.Microsecond)
		if _, err := inspect(ctx, e.RC, "exp:lock"); err != nil && strings.Contains(err.Error(), "without expiry") {
			wrong = append(wrong, err.Error())
		}
		e.Do(t, "DEL", "exp:lock")
	}
	assert.Empty(t, wrong)
}
