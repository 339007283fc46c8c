// Package wakeup is the wake-up hub: one Redis subscription per channel per
// Client, shared by every local waiter on that channel.
//
// Wake-ups are hints. A waiter always bounds its wait by a poll interval, so a
// lost message, a killed pub/sub connection or a failed subscription costs at
// most one interval. The hub still does its best to keep hints flowing:
//
//   - The first waiter on a channel starts a receiver goroutine that runs
//     rueidis's Receive (SUBSCRIBE, or SSUBSCRIBE on a Cluster). Later waiters
//     share it. When the last one leaves, the subscription lingers for
//     Linger, so that a waiter coming back soon (a worker that locks again
//     and again) finds it ready instead of paying a new SUBSCRIBE and missing
//     the releases sent meanwhile; then the receiver stops and UNSUBSCRIBEs.
//   - Ready closes when the server confirms the subscription, so a waiter can
//     retry once it can no longer miss a release.
//   - A message "0" wakes one local waiter (the oldest not yet woken); any
//     other payload wakes all of them.
//   - Every confirmation after the first means the connection dropped and the
//     subscription was restored: messages may have been lost, so every local
//     waiter is woken to re-check. So is every waiter when Receive fails.
//   - A waiter that leaves without using its wake-up passes it on.
package wakeup

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/redis/rueidis"
)

// Linger is how long a subscription outlives its last waiter.
const Linger = time.Second

// Hub multiplexes channel subscriptions for one rueidis client.
type Hub struct {
	rc      rueidis.Client
	sharded bool
	log     *slog.Logger
	backoff time.Duration // pause between failed subscription attempts

	mu       sync.Mutex
	channels map[string]*channel
	closed   bool

	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup
}

// New returns a hub; sharded selects SSUBSCRIBE (Redis Cluster). backoff
// bounds how often a failing subscription is retried.
func New(rc rueidis.Client, sharded bool, backoff time.Duration, log *slog.Logger) *Hub {
	ctx, cancel := context.WithCancel(context.Background())
	return &Hub{rc: rc, sharded: sharded, backoff: backoff, log: log,
		channels: make(map[string]*channel), ctx: ctx, cancel: cancel}
}

type channel struct {
	name      string
	waiters   []*Waiter // in arrival order
	ready     chan struct{}
	confirmed bool
	stop      context.CancelFunc
	done      chan struct{} // closed when the receiver goroutine has exited
	linger    *time.Timer   // set while the channel has no waiter and lingers
	broadcast bool          // JoinAll: every message wakes every waiter
}

// Waiter is one local waiter's membership of a channel.
type Waiter struct {
	hub    *Hub
	ch     *channel
	signal chan struct{} // capacity 1: a pending wake-up survives until read
	left   bool
}

// Join adds a waiter to channel name, subscribing if it is the first.
// Call Leave when done. After Close, or if ctx ends while Join waits for an
// old subscription of the channel to finish, Join returns a waiter that is
// never ready and never woken (the caller's poll bound and ctx still apply).
func (h *Hub) Join(ctx context.Context, name string) *Waiter {
	inert := func() *Waiter {
		return &Waiter{hub: h, ch: &channel{ready: make(chan struct{})}, signal: make(chan struct{}, 1), left: true}
	}
	for {
		h.mu.Lock()
		if h.closed {
			h.mu.Unlock()
			return inert()
		}
		ch := h.channels[name]
		if ch != nil && ch.stop == nil {
			// The last waiter left and the receiver is shutting down: wait for
			// its UNSUBSCRIBE so it cannot cancel our new SUBSCRIBE — but not
			// past ctx (a cut network can hold the UNSUBSCRIBE for a while).
			done := ch.done
			h.mu.Unlock()
			select {
			case <-done:
			case <-ctx.Done():
				return inert()
			}
			continue
		}
		if ch == nil {
			ch = h.start(name)
		}
		if ch.linger != nil {
			ch.linger.Stop() // if it fires anyway, it finds a waiter and does nothing
			ch.linger = nil
		}
		w := &Waiter{hub: h, ch: ch, signal: make(chan struct{}, 1)}
		ch.waiters = append(ch.waiters, w)
		h.mu.Unlock()
		return w
	}
}

// JoinAll is Join for a channel whose every message is meant for every
// local waiter, "0" included: a countdown latch's "0" opens it for all.
func (h *Hub) JoinAll(ctx context.Context, name string) *Waiter {
	w := h.Join(ctx, name)
	h.mu.Lock()
	w.ch.broadcast = true
	h.mu.Unlock()
	return w
}

// Ready is closed once the server has confirmed the subscription.
func (w *Waiter) Ready() <-chan struct{} { return w.ch.ready }

// C receives a value when the waiter should re-check.
func (w *Waiter) C() <-chan struct{} { return w.signal }

// Leave removes the waiter. A waiter that gives up while it holds an unused
// wake-up — pending, or taken from C but not acted on (unused) — passes it to
// the next waiter, so a release meant for this process is not wasted on a
// waiter that stopped listening.
func (w *Waiter) Leave(unused bool) {
	h := w.hub
	h.mu.Lock()
	defer h.mu.Unlock()
	if w.left {
		return
	}
	w.left = true
	ch := w.ch
	for i, o := range ch.waiters {
		if o == w {
			ch.waiters = append(ch.waiters[:i], ch.waiters[i+1:]...)
			break
		}
	}
	select {
	case <-w.signal:
		unused = true
	default:
	}
	if unused {
		wakeOne(ch)
	}
	if len(ch.waiters) == 0 && ch.linger == nil {
		ch.linger = time.AfterFunc(Linger, func() { h.expire(ch) })
	}
}

// expire stops a channel that lingered without a waiter.
func (h *Hub) expire(ch *channel) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed || len(ch.waiters) > 0 || ch.stop == nil || ch.linger == nil {
		return
	}
	ch.linger = nil
	ch.stop()
	ch.stop = nil // marks "shutting down" for Join
}

// Close stops every receiver and waits for them. Waiters still joined are
// woken so they notice.
func (h *Hub) Close() {
	h.mu.Lock()
	h.closed = true
	for _, ch := range h.channels {
		wakeAll(ch)
		if ch.linger != nil {
			ch.linger.Stop()
		}
	}
	h.mu.Unlock()
	h.cancel()
	h.wg.Wait()
}

// Channels reports how many channels have a live subscription (for tests).
func (h *Hub) Channels() int {
	h.mu.Lock()
	defer h.mu.Unlock()
	return len(h.channels)
}

// start creates the channel entry and its receiver; h.mu is held.
func (h *Hub) start(name string) *channel {
	ctx, stop := context.WithCancel(h.ctx)
	ch := &channel{name: name, ready: make(chan struct{}), stop: stop, done: make(chan struct{})}
	h.channels[name] = ch
	h.wg.Add(1)
	go h.receive(ctx, ch)
	return ch
}

func (h *Hub) subscribeCmd(name string) rueidis.Completed {
	if h.sharded {
		return h.rc.B().Ssubscribe().Channel(name).Build()
	}
	return h.rc.B().Subscribe().Channel(name).Build()
}

func (h *Hub) unsubscribeCmd(name string) rueidis.Completed {
	if h.sharded {
		return h.rc.B().Sunsubscribe().Channel(name).Build()
	}
	return h.rc.B().Unsubscribe().Channel(name).Build()
}

// receive keeps ch subscribed until its context ends.
func (h *Hub) receive(ctx context.Context, ch *channel) {
	defer h.wg.Done()
	defer func() {
		h.mu.Lock()
		if h.channels[ch.name] == ch {
			delete(h.channels, ch.name)
		}
		close(ch.done)
		h.mu.Unlock()
	}()
	// Unsubscribe on the same connection when Receive returns because our
	// context ended; rueidis leaves the server-side subscription otherwise.
	rctx := rueidis.WithOnReceiveReturnHook(ctx, func(err error, cc rueidis.CommandClient) error {
		if ctx.Err() != nil {
			uctx, cancel := context.WithTimeout(context.Background(), time.Second)
			cc.Do(uctx, h.unsubscribeCmd(ch.name))
			cancel()
		}
		return err
	})
	rctx = rueidis.WithOnSubscriptionHook(rctx, func(s rueidis.PubSubSubscription) {
		if s.Channel != ch.name || (s.Kind != "subscribe" && s.Kind != "ssubscribe") {
			return
		}
		h.mu.Lock()
		defer h.mu.Unlock()
		if !ch.confirmed {
			ch.confirmed = true
			close(ch.ready)
			return
		}
		wakeAll(ch) // resubscribed after a reconnect: messages may be lost
	})
	for {
		err := h.rc.Receive(rctx, h.subscribeCmd(ch.name), func(m rueidis.PubSubMessage) {
			h.mu.Lock()
			defer h.mu.Unlock()
			if m.Message == "0" && !ch.broadcast {
				wakeOne(ch)
			} else {
				wakeAll(ch)
			}
		})
		if ctx.Err() != nil {
			return
		}
		// The subscription ended without our asking: wake everyone to
		// re-check, then subscribe again after a pause.
		if h.log != nil {
			h.log.Warn("redisync: subscription interrupted", "channel", ch.name, "err", err)
		}
		h.mu.Lock()
		wakeAll(ch)
		h.mu.Unlock()
		select {
		case <-ctx.Done():
			return
		case <-time.After(h.backoff):
		}
	}
}

// wakeOne signals the oldest waiter without a pending wake-up; h.mu is held.
func wakeOne(ch *channel) {
	for _, w := range ch.waiters {
		select {
		case w.signal <- struct{}{}:
			return
		default:
		}
	}
}

// wakeAll signals every waiter; h.mu is held.
func wakeAll(ch *channel) {
	for _, w := range ch.waiters {
		select {
		case w.signal <- struct{}{}:
		default:
		}
	}
}
