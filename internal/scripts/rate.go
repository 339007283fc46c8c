package scripts

import (
	"context"
	_ "embed"
	"errors"
	"fmt"
	"strconv"

	"github.com/redis/rueidis"

	"github.com/redisync/redisync/internal/errs"
)

var (
	//go:embed rate_lib.lua
	rateLibSrc string
	//go:embed rate_decide.lua
	rateDecideSrc string
	//go:embed rate_give_back.lua
	rateGiveBackSrc string
	//go:embed rate_reset.lua
	rateResetSrc string

	rateDecide   = newScript(rateLibSrc + "\n" + rateDecideSrc)
	rateGiveBack = newScript(rateLibSrc + "\n" + rateGiveBackSrc)
	rateReset    = newScript(rateLibSrc + "\n" + rateResetSrc)
)

// RateLimit is a rate limiter's parameters as the scripts take them: the
// emission interval and the burst tolerance in µs, in decimal.
type RateLimit struct {
	Interval  string // µs per event, >= 1
	Tolerance string // burst × Interval
}

// Rate decision modes (rate_decide.lua's ARGV[4]).
const (
	RateAllOrNothing = ""
	RateAtMost       = "m"
	RateReserve      = "w"
)

// RateDecision is the reply of rate_decide.lua, in µs.
type RateDecision struct {
	Admitted, Remaining int64
	RetryUs, ResetUs    int64
	// EndUs and Gen name a reservation (RateReserve, admitted only), for
	// RateGiveBack.
	EndUs int64
	Gen   string
}

// RateDecide runs rate_decide.lua on key: one decision for n events in
// mode; longestUs bounds a reservation's delay (-1: none). A decision the
// replicas did not acknowledge reports what it did on the master, with the
// error.
func RateDecide(ctx context.Context, c rueidis.Client, key string, l *RateLimit, n int64, mode string, longestUs int64) (RateDecision, error) {
	args := []string{l.Interval, l.Tolerance, strconv.FormatInt(n, 10)}
	if mode != RateAllOrNothing {
		args = append(args, mode)
		if mode == RateReserve && longestUs >= 0 {
			args = append(args, strconv.FormatInt(longestUs, 10))
		}
	}
	res := rateDecide.Exec(ctx, c, []string{key}, args)
	msg, err := res.ToMessage()
	var u *errs.UnconfirmedError
	if errors.As(err, &u) {
		msg, _ = u.Reply.ToMessage()
	} else if err != nil {
		return RateDecision{}, err
	}
	d, perr := parseRateDecision(msg)
	if perr != nil {
		return RateDecision{}, fmt.Errorf("scripts: unexpected rate decision reply: %w", perr)
	}
	return d, err
}

func parseRateDecision(msg rueidis.RedisMessage) (RateDecision, error) {
	vals, err := msg.ToArray()
	if err != nil {
		return RateDecision{}, err
	}
	if len(vals) != 4 && len(vals) != 6 {
		return RateDecision{}, fmt.Errorf("%d values, want 4 or 6", len(vals))
	}
	var d RateDecision
	for i, p := range []*int64{&d.Admitted, &d.Remaining, &d.RetryUs, &d.ResetUs} {
		if *p, err = vals[i].AsInt64(); err != nil {
			return RateDecision{}, err
		}
	}
	if len(vals) == 6 {
		if d.EndUs, err = vals[4].AsInt64(); err != nil {
			return RateDecision{}, err
		}
		if d.Gen, err = vals[5].ToString(); err != nil {
			return RateDecision{}, err
		}
	}
	return d, nil
}

// RateGiveBack runs rate_give_back.lua for the reservation d of n events:
// it returns the credit given back in µs (0: none; see the script for
// how much, and when).
func RateGiveBack(ctx context.Context, c rueidis.Client, key string, l *RateLimit, n int64, d RateDecision) (int64, error) {
	return rateGiveBack.Exec(ctx, c, []string{key},
		[]string{l.Interval, l.Tolerance, strconv.FormatInt(n, 10), strconv.FormatInt(d.EndUs, 10), d.Gen}).AsInt64()
}

// RateReset runs rate_reset.lua: it reports whether a key was deleted.
func RateReset(ctx context.Context, c rueidis.Client, key string) (bool, error) {
	v, err := rateReset.Exec(ctx, c, []string{key}, nil).AsInt64()
	var u *errs.UnconfirmedError
	if errors.As(err, &u) {
		v, _ = u.Reply.AsInt64()
	}
	return v == 1, err
}
