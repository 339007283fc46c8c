package engine_test

import (
	"context"
	"io"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync/internal/engine"
)

// TestWaitedMeansAnotherHolderWentFirst: Wait's waited (an Acquired
// event's Waited, the handoffs metric) says that an attempt found the name
// busy; a transient error retried (a connection dropped on a loaded
// machine) before a free name's grant is no wait for a holder.
func TestWaitedMeansAnotherHolderWentFirst(t *testing.T) {
	e := newEngine(t)
	for _, tc := range []struct {
		name    string
		replies []func() (bool, error) // each attempt's outcome, in order
		waited  bool
	}{
		{"granted at once", []func() (bool, error){grant}, false},
		{"a transient error, then granted", []func() (bool, error){transient, transient, grant}, false},
		{"busy, then granted", []func() (bool, error){busy, grant}, true},
		{"a transient error, busy, then granted", []func() (bool, error){transient, busy, grant}, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			n := 0
			try := func(context.Context) (bool, time.Duration, error) {
				ok, err := tc.replies[n]()
				n++
				return ok, time.Millisecond, err
			}
			waited, _, err := e.Wait(context.Background(), engine.Wait{Channel: "waited:" + tc.name, Poll: 10 * time.Millisecond}, try)
			require.NoError(t, err)
			assert.Equal(t, len(tc.replies), n)
			assert.Equal(t, tc.waited, waited)
		})
	}
}

func grant() (bool, error)     { return true, nil }
func busy() (bool, error)      { return false, nil }
func transient() (bool, error) { return false, io.EOF }
