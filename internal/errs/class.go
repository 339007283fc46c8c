package errs

import (
	"context"
	"errors"
	"io"
	"net"
	"strings"
	"syscall"

	"github.com/redis/rueidis"
)

// Class says what a caller that is waiting for something should do after an
// error: the one answer to "retry or give up" that the wait loop, redlock,
// multilock, the latch and the command share.
type Class int

const (
	// Permanent: the same request gets the same answer until someone
	// changes the data, the ACL or the configuration — a key of another
	// kind, NOPERM, OOM, a bad argument, a closed client, or the caller's
	// own context's end. Give up and report it.
	Permanent Class = iota
	// Transient: a failure to get an answer that passes by itself — a
	// refused, reset or timed-out connection, a server loading its data,
	// a failover or a slot migration in progress, a script cache that was
	// flushed. Retry after a backoff, within the caller's ctx.
	Transient
	// Busy: the answer is "held by someone else". Wait for a release (or a
	// poll), within the caller's ctx.
	Busy
)

func (c Class) String() string {
	switch c {
	case Transient:
		return "transient"
	case Busy:
		return "busy"
	}
	return "permanent"
}

// transientReplies are the first words of Redis error replies that pass by
// themselves: a server loading its data set (LOADING) or busy running a
// script (BUSY), a Cluster whose slots are moving or down (TRYAGAIN, MOVED,
// ASK, CLUSTERDOWN), a replica that lost its master or a master short of
// the replicas min-replicas-to-write asks for (MASTERDOWN, NOREPLICAS), a
// former master demoted by a failover the client has not followed yet
// (READONLY), and a script cache flushed between two calls (NOSCRIPT: the
// next call loads the script again).
var transientReplies = map[string]bool{
	"LOADING": true, "BUSY": true, "TRYAGAIN": true, "MOVED": true, "ASK": true,
	"CLUSTERDOWN": true, "MASTERDOWN": true, "NOREPLICAS": true, "READONLY": true,
	"NOSCRIPT": true,
}

// Classify says which Class err is in; nil is Busy (an attempt that failed
// without an error found the lock taken). In order:
//
//   - a context's end (Canceled, DeadlineExceeded), a closed Client
//     (ErrClosed) or rueidis client (ErrClosing): Permanent — the caller
//     stops;
//   - an error made by New carries its own class (a package's sentinels:
//     redlock's node busy, node timeout, node restarted);
//   - a Redis error reply: Transient for the first words listed in
//     transientReplies, Permanent for every other (WRONGTYPE, NOPERM, OOM,
//     NOAUTH, WRONGPASS, ERR ...);
//   - a transport failure (EOF, a closed, refused, reset or aborted
//     connection, a broken pipe, any net.Error: timeouts, dial and DNS
//     errors): Transient;
//   - anything else — a WrongKindError, ErrNotReplicated (the write was
//     rolled back; another attempt would spend another WAIT timeout on the
//     same replicas: the caller decides), ErrInvalidName, ErrNonReentrant,
//     a primitive's refusal of its arguments: Permanent.
func Classify(err error) Class {
	if err == nil {
		return Busy
	}
	if errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded) ||
		errors.Is(err, ErrClosed) || errors.Is(err, rueidis.ErrClosing) {
		return Permanent
	}
	var c *classed
	if errors.As(err, &c) {
		return c.class
	}
	var rerr *rueidis.RedisError
	if errors.As(err, &rerr) {
		word, _, _ := strings.Cut(rerr.Error(), " ")
		if transientReplies[word] {
			return Transient
		}
		return Permanent
	}
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) || errors.Is(err, net.ErrClosed) ||
		errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.ECONNREFUSED) ||
		errors.Is(err, syscall.EPIPE) || errors.Is(err, syscall.ECONNABORTED) {
		return Transient
	}
	var ne net.Error
	if errors.As(err, &ne) {
		return Transient
	}
	return Permanent
}

// New returns a sentinel error with message msg that Classify puts in
// class.
func New(class Class, msg string) error { return &classed{msg: msg, class: class} }

type classed struct {
	msg   string
	class Class
}

func (c *classed) Error() string { return c.msg }
