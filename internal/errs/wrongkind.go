package errs

import (
	"errors"
	"fmt"
)

// ErrWrongKind: a key the operation would use holds something that is not
// this primitive's layout — a user's data, another kind of lock, a key
// without the expiry a lock always has. The operation changed nothing.
var ErrWrongKind = errors.New("redisync: key holds something else")

// WrongKindError names the key and what was found there; it matches
// ErrWrongKind.
type WrongKindError struct {
	Key   string // the key
	Found string // what it holds, as the script saw it: "hash without mode", "string", "semaphore", ...
}

func (e *WrongKindError) Error() string {
	return fmt.Sprintf("redisync: key %q holds %s, not this lock", e.Key, e.Found)
}

// Unwrap makes errors.Is(err, ErrWrongKind) hold.
func (e *WrongKindError) Unwrap() error { return ErrWrongKind }
