package deploytest

import (
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/redistest"
)

// TestFencingTokensRiseAcrossStepsBackLargerThanKeepToken: the 10 s of
// KEEP_TOKEN_MS bound no step back that comes while the last-token key is
// still there — what docs/guarantees.md's bound says (the key lives until
// the clock is 10 s past both the token and the release, by absolute
// time). A step back of 60 s right after a release, and one during a hold
// (released after it), both give every kind a higher token at the next
// grant, right away and 1.2 s later.
func TestFencingTokensRiseAcrossStepsBackLargerThanKeepToken(t *testing.T) {
	srv, clock := redistest.StartShifted(t, 0)
	c := redisync.New(srv.Client(t))
	defer c.Close()
	const big = 60 * time.Second
	for _, k := range tokenKinds() {
		name := "bigstep:" + k.name
		last, release := k.acquire(t, c, name)
		release()
		clock.Step(-big)
		tok, release := k.acquire(t, c, name)
		require.Greater(t, tok, last, "%s: step back of %v right after the release", k.name, big)
		last = tok
		clock.Step(-big) // during the hold
		release()
		time.Sleep(1200 * time.Millisecond)
		tok, release = k.acquire(t, c, name)
		require.Greater(t, tok, last, "%s: step back of %v during the hold", k.name, big)
		release()
		clock.Set(0)
	}
}
