package torture

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// The oracles on hand-made histories: each must flag what it is for, and
// only that.

func TestFIFOOracleFlagsAWaiterOvertaken(t *testing.T) {
	ms := time.Millisecond
	// Sorted by grant (Enter). Worker 2 called 400 ms before worker 3 but
	// was granted after it: one inversion. Worker 4 called 10 ms before
	// worker 3 (within the slack): not one.
	hs := []hold{
		{Worker: 1, Call: 0, Enter: 1 * ms},
		{Worker: 3, Call: 500 * ms, Enter: 600 * ms},
		{Worker: 2, Call: 100 * ms, Enter: 700 * ms},
		{Worker: 4, Call: 490 * ms, Enter: 800 * ms},
	}
	assert.Equal(t, 1, fifoInversions(hs))
	assert.Zero(t, fifoInversions([]hold{hs[0], hs[2], hs[1], hs[3]}))
}

func TestStaleOracleJudgesByTheResourcesOrder(t *testing.T) {
	w := func(token uint64, ver int64) hold {
		return hold{Names: []string{"n"}, Tokens: []uint64{token}, Write: []string{"accepted"}, Vers: []int64{ver}}
	}
	assert.Zero(t, staleAccepted("n", []hold{w(10, 1), w(20, 2), w(30, 3)}))
	// The resource took token 20 after token 30: a stale write accepted.
	assert.Equal(t, 1, staleAccepted("n", []hold{w(10, 1), w(30, 2), w(20, 3)}))
	// Rejected writes do not count.
	rejected := w(5, 0)
	rejected.Write = []string{"stale"}
	assert.Zero(t, staleAccepted("n", []hold{w(10, 1), rejected, w(30, 2)}))
}

func TestOverlapOracleKnowsModesAndExcuses(t *testing.T) {
	ms := time.Millisecond
	r := &runState{cfg: Config{Permits: 2}}
	h := func(mode string, enter, exit time.Duration) hold {
		return hold{Names: []string{"n"}, Mode: mode, Enter: enter, Exit: exit}
	}
	count := func(hs ...hold) (int, int) {
		rep := &Report{}
		r.overlaps(rep, hs)
		return rep.Overlaps, rep.OverlapsUnexcused
	}
	all, unexcused := count(h(modeRead, 0, 10*ms), h(modeRead, 5*ms, 15*ms))
	assert.Zero(t, all+unexcused, "readers share")
	_, unexcused = count(h(modeRead, 0, 10*ms), h(modeExclusive, 5*ms, 15*ms))
	assert.Equal(t, 1, unexcused, "a writer with a reader")
	paused := h(modeExclusive, 0, 10*ms)
	paused.Paused = true
	all, unexcused = count(paused, h(modeExclusive, 5*ms, 15*ms))
	assert.Equal(t, 1, all)
	assert.Zero(t, unexcused, "a paused holder is excused")
	toldLate := h(modeExclusive, 0, 300*ms)
	toldLate.LostAt = 290 * ms // told long after the other began at 5 ms
	_, unexcused = count(toldLate, h(modeExclusive, 5*ms, 15*ms))
	assert.Equal(t, 1, unexcused, "a loss signalled late is no excuse")
	_, unexcused = count(h(modePermit, 0, 10*ms), h(modePermit, 1*ms, 10*ms), h(modePermit, 2*ms, 10*ms))
	assert.Equal(t, 1, unexcused, "three permits of two")
}
