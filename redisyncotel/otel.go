// Package redisyncotel reports a redisync.Client's events as OpenTelemetry
// metrics. It is a module of its own, so that redisync itself keeps no
// OpenTelemetry dependency.
//
//	obs, err := redisyncotel.New(otel.GetMeterProvider())
//	c := redisync.New(rc, redisync.WithObserver(obs))
//
// Instruments (attribute redisync.primitive on all of them: "rlock",
// "fairlock", "rwlock.read", "rwlock.write", "semaphore"; for renewals the
// layout renewed: "lock", "rwlock", "semaphore"):
//
//	redisync.acquisitions        counter    grants
//	redisync.handoffs            counter    grants that had to wait for another holder
//	redisync.acquire.wait        histogram  s, from the call to the grant
//	redisync.acquire.latency     histogram  s, the granting round trip
//	redisync.hold.duration       histogram  s, attribute redisync.outcome = released | lost
//	redisync.lost                counter    holds lost (lease ran out, key deleted, Client closed)
//	redisync.renewals            counter    holds renewed by the watchdog
//	redisync.renewal.failures    counter    renewal batches that got no answer (retried)
//	redisync.renewal.latency     histogram  s, one batch's round trip
//
// Lock names are not attributes unless WithLockNames is given: names are
// often unbounded (one per order, per user), and every name would be a new
// time series.
//
// The Redis commands underneath are rueidis's: wrap the rueidis client with
// rueidisotel (github.com/redis/rueidis/rueidisotel) before giving it to
// redisync.New to trace and measure them too. The two do not overlap:
// rueidisotel sees commands, this package sees locks.
package redisyncotel

import (
	"context"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"

	"github.com/redisync/redisync"
)

// ScopeName is the instrumentation scope of the meter.
const ScopeName = "github.com/redisync/redisync/redisyncotel"

// Option configures the observer.
type Option func(*config)

type config struct{ names bool }

// WithLockNames adds the attribute redisync.name (the lock or semaphore
// name) to the per-lock instruments. Use it only when names are few.
func WithLockNames() Option { return func(c *config) { c.names = true } }

type observer struct {
	cfg                               config
	acquisitions, handoffs, lost      metric.Int64Counter
	renewals, renewFailures           metric.Int64Counter
	wait, latency, held, renewLatency metric.Float64Histogram
	released, lostOutcome             attribute.KeyValue
}

// New returns a redisync.Observer that records metrics through mp.
func New(mp metric.MeterProvider, opts ...Option) (redisync.Observer, error) {
	o := &observer{
		released:    attribute.String("redisync.outcome", "released"),
		lostOutcome: attribute.String("redisync.outcome", "lost"),
	}
	for _, opt := range opts {
		opt(&o.cfg)
	}
	m := mp.Meter(ScopeName)
	var err error
	counter := func(dst *metric.Int64Counter, name, desc string) {
		if err == nil {
			*dst, err = m.Int64Counter(name, metric.WithDescription(desc))
		}
	}
	histogram := func(dst *metric.Float64Histogram, name, desc string) {
		if err == nil {
			*dst, err = m.Float64Histogram(name, metric.WithUnit("s"), metric.WithDescription(desc))
		}
	}
	counter(&o.acquisitions, "redisync.acquisitions", "Holds granted.")
	counter(&o.handoffs, "redisync.handoffs", "Holds granted after waiting for another holder.")
	counter(&o.lost, "redisync.lost", "Holds lost without their release.")
	counter(&o.renewals, "redisync.renewals", "Holds renewed by the watchdog.")
	counter(&o.renewFailures, "redisync.renewal.failures", "Renewal batches that got no answer (they are retried).")
	histogram(&o.wait, "redisync.acquire.wait", "Time from the acquire call to the grant.")
	histogram(&o.latency, "redisync.acquire.latency", "Round trip of the granting attempt.")
	histogram(&o.held, "redisync.hold.duration", "How long holds lasted.")
	histogram(&o.renewLatency, "redisync.renewal.latency", "Round trip of a renewal batch.")
	if err != nil {
		return nil, err
	}
	return o, nil
}

func (o *observer) Observe(ev redisync.Event) {
	ctx := context.Background()
	attrs := []attribute.KeyValue{attribute.String("redisync.primitive", ev.Primitive)}
	if o.cfg.names && ev.Name != "" {
		attrs = append(attrs, attribute.String("redisync.name", ev.Name))
	}
	set := metric.WithAttributes(attrs...)
	switch ev.Kind {
	case redisync.EventAcquired:
		o.acquisitions.Add(ctx, 1, set)
		if ev.Waited {
			o.handoffs.Add(ctx, 1, set)
		}
		o.wait.Record(ctx, ev.Wait.Seconds(), set)
		o.latency.Record(ctx, ev.Latency.Seconds(), set)
	case redisync.EventReleased:
		o.held.Record(ctx, ev.Held.Seconds(), metric.WithAttributes(append(attrs, o.released)...))
	case redisync.EventLost:
		o.lost.Add(ctx, 1, set)
		o.held.Record(ctx, ev.Held.Seconds(), metric.WithAttributes(append(attrs, o.lostOutcome)...))
	case redisync.EventRenewed:
		o.renewals.Add(ctx, int64(ev.Count), set)
		o.renewLatency.Record(ctx, ev.Latency.Seconds(), set)
	case redisync.EventRenewFailed:
		o.renewFailures.Add(ctx, 1, set)
	}
}
