package main

import (
	"context"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/redisync/redisync/internal/locktest"
	"github.com/redisync/redisync/rwlock"
)

// A writer waiting with writer preference is shown in the queue without a
// waiting time of 0s: its claim records a heartbeat deadline, not when the
// wait began, so inspect says it does not know rather than a number.
func TestInspectDoesNotShowAWaitingWriterAsJustArrived(t *testing.T) {
	e := locktest.Setup(t)
	bg := locktest.Bg()
	r := rwlock.New(e.C, "i:wpref")
	require.NoError(t, r.RLock(bg))
	w := rwlock.New(e.C, "i:wpref", rwlock.WithWriterPreference())
	ctx, cancel := context.WithCancel(bg)
	defer cancel()
	waitDone := make(chan error, 1)
	go func() { waitDone <- w.Lock(ctx) }()
	locktest.Eventually(t, 5*time.Second, func() bool {
		return strings.Contains(cli(t, e, "", "inspect", "i:wpref").stdout, "heartbeat lapses in")
	}, "the writer's claim")
	const waited = 1200 * time.Millisecond
	time.Sleep(waited)

	res := cli(t, e, "", "inspect", "--json", "i:wpref")
	require.Equal(t, 0, res.code, res.stderr)
	var got struct {
		Queue []map[string]any `json:"queue"`
	}
	require.NoError(t, json.Unmarshal([]byte(res.stdout), &got), res.stdout)
	require.Len(t, got.Queue, 1, res.stdout)
	if ms, ok := got.Queue[0]["waiting_ms"].(float64); ok {
		assert.GreaterOrEqual(t, ms, float64(waited.Milliseconds()), "waiting_ms: %s", res.stdout)
	}

	res = cli(t, e, "", "inspect", "i:wpref")
	require.Equal(t, 0, res.code, res.stderr)
	var row []string
	for _, line := range strings.Split(res.stdout, "\n") {
		if f := strings.Fields(line); len(f) == 4 && f[0] == "1" {
			row = f
		}
	}
	require.NotNil(t, row, "no queue row in\n%s", res.stdout)
	if row[2] != "-" {
		d, err := time.ParseDuration(row[2])
		require.NoError(t, err, res.stdout)
		assert.GreaterOrEqual(t, d, waited, "the waiting column:\n%s", res.stdout)
	}
	cancel()
	assert.ErrorIs(t, <-waitDone, context.Canceled)
}
