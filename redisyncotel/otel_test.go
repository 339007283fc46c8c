package redisyncotel_test

import (
	"context"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.uber.org/goleak"

	"github.com/redisync/redisync"
	"github.com/redisync/redisync/internal/locktest"
	"github.com/redisync/redisync/redisyncotel"
	"github.com/redisync/redisync/rlock"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestMetricsAfterAcquireContendLose(t *testing.T) {
	reader := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
	t.Cleanup(func() { _ = mp.Shutdown(context.Background()) })
	o, err := redisyncotel.New(mp, redisyncotel.WithLockNames())
	require.NoError(t, err)
	e := locktest.Setup(t, redisync.WithObserver(o), redisync.WithWatchdogTimeout(300*time.Millisecond))
	ctx := context.Background()

	// Acquire; contend (the second waits and is handed the lock); lose.
	a, b := rlock.New(e.C, "otel:lock"), rlock.New(e.C, "otel:lock")
	require.NoError(t, a.Lock(ctx))
	got := make(chan error, 1)
	go func() { got <- b.Lock(ctx) }()
	time.Sleep(50 * time.Millisecond)
	require.NoError(t, a.Unlock(ctx))
	require.NoError(t, <-got)
	// A renewal before the loss: due every 100 ms, but a fixed 200 ms sleep
	// saw none beside a second make test, so wait until one is counted.
	locktest.Eventually(t, 5*time.Second, func() bool {
		var rm metricdata.ResourceMetrics
		require.NoError(t, reader.Collect(ctx, &rm))
		for _, sm := range rm.ScopeMetrics {
			for _, m := range sm.Metrics {
				if sum, ok := m.Data.(metricdata.Sum[int64]); ok && m.Name == "redisync.renewals" {
					for _, dp := range sum.DataPoints {
						if dp.Value > 0 {
							return true
						}
					}
				}
			}
		}
		return false
	}, "a renewal counted")
	e.Do(t, "DEL", "otel:lock")
	locktest.Eventually(t, 2*time.Second, func() bool { return b.Err() != nil }, "loss signalled")

	// The lost hold's duration is recorded by the loss's event, which may
	// come just after Err is visible (beside a second make test it was not
	// yet counted once): collect until both holds' durations are in.
	var rm metricdata.ResourceMetrics
	locktest.Eventually(t, 2*time.Second, func() bool {
		rm = metricdata.ResourceMetrics{}
		require.NoError(t, reader.Collect(ctx, &rm))
		var held uint64
		for _, sm := range rm.ScopeMetrics {
			for _, m := range sm.Metrics {
				if h, ok := m.Data.(metricdata.Histogram[float64]); ok && m.Name == "redisync.hold.duration" {
					for _, dp := range h.DataPoints {
						held += dp.Count
					}
				}
			}
		}
		return held >= 2
	}, "both holds' durations recorded")
	sums := map[string]int64{}
	counts := map[string]uint64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			switch data := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, dp := range data.DataPoints {
					sums[m.Name] += dp.Value
				}
			case metricdata.Histogram[float64]:
				for _, dp := range data.DataPoints {
					counts[m.Name] += dp.Count
					if m.Name == "redisync.acquire.wait" {
						name, _ := dp.Attributes.Value("redisync.name")
						assert.Equal(t, "otel:lock", name.AsString())
					}
				}
			}
		}
	}
	assert.Equal(t, int64(2), sums["redisync.acquisitions"])
	assert.Equal(t, int64(1), sums["redisync.handoffs"])
	assert.Equal(t, int64(1), sums["redisync.lost"])
	assert.Positive(t, sums["redisync.renewals"])
	assert.Equal(t, uint64(2), counts["redisync.acquire.wait"])
	assert.Equal(t, uint64(2), counts["redisync.hold.duration"], "one released, one lost")
	assert.Positive(t, counts["redisync.renewal.latency"])
}
