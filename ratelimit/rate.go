package ratelimit

import (
	"fmt"
	"time"
)

// Rate is Limit events per Period, spread evenly: one every Period/Limit
// (the emission interval), with bursts of up to the limiter's burst.
type Rate struct {
	Limit  int64
	Period time.Duration
}

// PerSecond is n events a second.
func PerSecond(n int64) Rate { return Rate{Limit: n, Period: time.Second} }

// PerMinute is n events a minute.
func PerMinute(n int64) Rate { return Rate{Limit: n, Period: time.Minute} }

// PerHour is n events an hour.
func PerHour(n int64) Rate { return Rate{Limit: n, Period: time.Hour} }

// Every is one event every d.
func Every(d time.Duration) Rate { return Rate{Limit: 1, Period: d} }

// Interval is the emission interval the limiter counts with: Period/Limit
// rounded up to a whole microsecond (the scripts count in the server's
// microseconds), so a limiter never admits more than r. 0 for a rate New
// refuses.
func (r Rate) Interval() time.Duration {
	us, err := r.intervalUs()
	if err != nil {
		return 0
	}
	return time.Duration(us) * time.Microsecond
}

func (r Rate) String() string {
	return fmt.Sprintf("%d per %v", r.Limit, r.Period)
}

// intervalUs is Interval in µs, or why r cannot be used.
func (r Rate) intervalUs() (int64, error) {
	if r.Limit <= 0 {
		return 0, fmt.Errorf("a limit of %d events is not positive", r.Limit)
	}
	if r.Period <= 0 {
		return 0, fmt.Errorf("a period of %v is not positive", r.Period)
	}
	if r.Period.Microseconds() < r.Limit {
		return 0, fmt.Errorf("%v is more than one event per microsecond, the finest interval the limiter counts", r)
	}
	ns := (r.Period.Nanoseconds() + r.Limit - 1) / r.Limit
	return (ns + 999) / 1000, nil
}
