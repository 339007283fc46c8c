package engine

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
)

// Each pause is drawn from [d/2, d] of a pace that doubles from Min to Max;
// Again keeps the pace, Reset starts it over.
func TestBackoffDoublesFromMinToMaxJittered(t *testing.T) {
	b := Backoff{Min: 10 * time.Millisecond, Max: 50 * time.Millisecond}
	within := func(d time.Duration, what string) {
		t.Helper()
		got := b.Next()
		assert.GreaterOrEqual(t, got, d/2, what)
		assert.LessOrEqual(t, got, d, what)
	}
	for range 100 {
		b.Reset()
		within(10*time.Millisecond, "first")
		within(20*time.Millisecond, "second")
		assert.LessOrEqual(t, b.Again(), 40*time.Millisecond, "again: the third pace")
		within(40*time.Millisecond, "the third pace, kept by Again")
		within(50*time.Millisecond, "capped")
		within(50*time.Millisecond, "stays capped")
	}
	assert.Zero(t, (&Backoff{}).Next(), "the zero Backoff does not wait")
}
