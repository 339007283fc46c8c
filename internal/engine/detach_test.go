package engine_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

type valueKey struct{}

// A DetachUnwatched context (reused or not) carries the caller's values
// but not its end, and when its work stops it ends whatever was derived
// from it and is still running — as a context.WithCancel's cancel would —
// instead of being reused while a derived context could still see it.
func TestADetachedContextKeepsTheCallersValuesAndEndsWhatWasDerivedFromIt(t *testing.T) {
	e := newEngine(t)
	for _, reuse := range []bool{true, false} {
		parent, cancel := context.WithCancel(context.WithValue(context.Background(), valueKey{}, "caller"))
		d := e.DetachUnwatched(parent, reuse)
		assert.Equal(t, "caller", d.Value(valueKey{}), "reuse %v", reuse)
		cancel()
		assert.NoError(t, d.Err(), "the caller's end does not end the work's context")
		select {
		case <-d.Done():
			t.Fatalf("reuse %v: ended with the caller's ctx", reuse)
		default:
		}
		child, stopChild := context.WithTimeout(d, time.Minute)
		d.Stop()
		select {
		case <-child.Done():
		case <-time.After(5 * time.Second):
			t.Fatalf("reuse %v: a context derived from the detached one outlived its Stop", reuse)
		}
		require.ErrorIs(t, child.Err(), context.Canceled)
		stopChild()
		d.Release()
		assert.ErrorIs(t, d.Err(), context.Canceled, "reuse %v: a detached context that was seen stays ended", reuse)
	}
}

// The detached contexts of many calls in a row, reused, each carry their
// own caller's values and start alive.
func TestReusedDetachedContextsCarryTheirOwnCallersValues(t *testing.T) {
	e := newEngine(t)
	for i := range 100 {
		parent := context.WithValue(context.Background(), valueKey{}, i)
		d := e.DetachUnwatched(parent, true)
		require.NoError(t, d.Err())
		require.Equal(t, i, d.Value(valueKey{}))
		d.Stop()
		d.Release()
	}
}
