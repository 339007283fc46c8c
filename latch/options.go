package latch

import (
	"fmt"
	"time"
)

// MinPoll is the shortest poll interval WithPoll accepts.
const MinPoll = time.Millisecond

// Option configures a Latch.
type Option func(*options)

type options struct {
	poll    time.Duration // 0: the Client's max poll
	pollSet bool
}

// WithPoll bounds how long Await sleeps between two checks of the count
// when no message comes: the guarantee behind the pub/sub wake-up, and all
// it costs when a message is lost. New panics if d is below MinPoll.
// Default: the Client's max poll (redisync.WithMaxPoll).
func WithPoll(d time.Duration) Option {
	return func(o *options) { o.poll, o.pollSet = d, true }
}

func (o *options) validate() {
	if o.pollSet && o.poll < MinPoll {
		panic(fmt.Sprintf("latch: poll interval %v is below the minimum %v", o.poll, MinPoll))
	}
}
