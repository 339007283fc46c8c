package redisync

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"
	"unicode/utf8"
)

// HolderInfo says who took a hold, so that an operator looking at a lock
// (redisync inspect, unlock --force, or the Holders method of any lock kind)
// sees a host and a process instead of an owner id alone. It is recorded
// with the hold's first renewal, a third of its lease after the grant (a
// fixed lease: by the watchdog's timer then), not by the acquire: a hold
// that ends sooner costs no record nobody reads, and a hold inspected
// before then shows none (Info nil).
//
// Host, PID and Program are read once per Client from the process
// (os.Hostname, os.Getpid, the base name of os.Args[0]); Label is the
// Client's WithLabel. Started is the server's clock when this owner's hold
// began: a nested Lock keeps it, a new hold after a full release gets a new
// one.
//
// Where it lives: a hash beside the lock, in its hash slot,
// "redisync_holder_info:{H}:<name>" (the lock's own layout — Redisson's,
// for rlock — is untouched), field = the hold's owner field (a semaphore
// permit's id). It lives eight leases from its write and its expiry is
// raised every four leases while the hold is renewed (a fixed lease's: one
// lease);
// the field goes when the owner's hold count reaches zero, the key goes with
// a force-unlock, and whatever a crashed holder left expires by itself.
// Readers show only fields of current holders. A hold taken by Redisson, or
// by a Client with WithHolderInfo(false), has none.
type HolderInfo struct {
	Host    string
	PID     int
	Program string
	Started time.Time // zero when not known
	Label   string
}

// Holder is one current holder of a lock, as the Holders method of every
// lock kind reports it.
type Holder struct {
	// Owner is the hold's owner id (the hash field of the lock; for a
	// semaphore, the permit's id; for a redlock, the key's value on a node:
	// the owner id and the round that won).
	Owner string
	// Mode is "read" or "write" for a read-write lock's holds (an owner that
	// holds both shows twice), "" for every other kind.
	Mode string
	// Count is the owner's hold count (for a semaphore: the permits held).
	Count int
	// TTL is the hold's remaining lease by the server's clock (for locks
	// whose holders share one key, the key's; negative: no expiry).
	TTL time.Duration
	// Info says who took the hold; nil when nothing was recorded (a
	// Redisson client, a Client with WithHolderInfo(false)).
	Info *HolderInfo
}

// Limits of the recorded metadata, in bytes. A longer label is refused (New
// panics: check it first with CheckLabel); a longer host name or program
// name is cut.
const (
	MaxLabelLength   = 128
	maxHostLength    = 255
	maxProgramLength = 255
)

// ErrBadLabel is returned by CheckLabel for a label the Client cannot record.
var ErrBadLabel = errors.New("redisync: bad holder label")

// CheckLabel reports whether WithLabel(label) would be accepted: at most
// MaxLabelLength bytes of valid UTF-8.
func CheckLabel(label string) error {
	if len(label) > MaxLabelLength {
		return fmt.Errorf("redisync: label of %d bytes, the limit is %d: %w", len(label), MaxLabelLength, ErrBadLabel)
	}
	if !utf8.ValidString(label) {
		return fmt.Errorf("redisync: label is not valid UTF-8: %w", ErrBadLabel)
	}
	return nil
}

// processHolderInfo is what a Client records: this process, and label.
func processHolderInfo(label string) HolderInfo {
	host, _ := os.Hostname()
	prog := ""
	if len(os.Args) > 0 {
		prog = filepath.Base(os.Args[0])
	}
	return HolderInfo{Host: cut(host, maxHostLength), PID: os.Getpid(), Program: cut(prog, maxProgramLength), Label: label}
}

// cut shortens s to at most n bytes, on a rune boundary.
func cut(s string, n int) string {
	if len(s) <= n {
		return s
	}
	s = s[:n]
	for len(s) > 0 && !utf8.ValidString(s) {
		s = s[:len(s)-1]
	}
	return s
}
