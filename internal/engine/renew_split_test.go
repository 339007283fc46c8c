package engine

import (
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestSplitBySlotKeepsSlotsTogetherAndCapsParts: each slot's calls are in
// one part; up to MaxRenewParts slots each slot is its own part, and beyond
// that neighbouring slots share parts (a node serves ranges of neighbouring
// slots), never more than MaxRenewParts of them.
func TestSplitBySlotKeepsSlotsTogetherAndCapsParts(t *testing.T) {
	for _, slots := range []int{1, 3, MaxRenewParts, MaxRenewParts + 1, 1000, 16384} {
		var calls []renewCall
		for i := range slots {
			slot := uint16((i * 7919) % 16384) // spread, out of order
			calls = append(calls, renewCall{slot: slot, idx: []int{2 * i}}, renewCall{slot: slot, idx: []int{2*i + 1}})
		}
		parts := splitBySlot(calls)
		assert.Equal(t, min(slots, MaxRenewParts), len(parts), "parts for %d slots", slots)
		seen := map[int]bool{}
		partOf := map[uint16]int{}
		last := -1
		for p, part := range parts {
			require.NotEmpty(t, part)
			for _, c := range part {
				if q, ok := partOf[c.slot]; ok {
					assert.Equal(t, q, p, "slot %d split over parts", c.slot)
				}
				partOf[c.slot] = p
				assert.GreaterOrEqual(t, int(c.slot), last, "parts hold ascending slot ranges")
				last = int(c.slot)
				for _, k := range c.idx {
					assert.False(t, seen[k], "call %d twice", k)
					seen[k] = true
				}
			}
		}
		assert.Equal(t, 2*slots, len(seen), "calls in a part")
	}
}
