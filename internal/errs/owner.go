package errs

import (
	"errors"
	"fmt"
)

// ErrInvalidOwner: an owner id given to a lock handle cannot be used, because
// it could be taken for a field or key the lock keeps beside its owners'.
var ErrInvalidOwner = errors.New("redisync: invalid owner id")

// InvalidOwnerError names the option, the owner id and why it is refused; it
// matches ErrInvalidOwner.
type InvalidOwnerError struct {
	Package string // the lock package: "rlock", "fairlock", "rwlock"
	Name    string // the lock's name
	Option  string // the option that gave the id: "WithOwner"
	Owner   string // the id
	Reason  string // why it cannot be used
}

func (e *InvalidOwnerError) Error() string {
	return fmt.Sprintf("%s %q: %s(%s): %s: %v", e.Package, e.Name, e.Option, quoteOwner(e.Owner), e.Reason, ErrInvalidOwner)
}

// ownerShown is how many bytes of an owner id a message quotes: an id
// refused for its length may be megabytes (a request body), and the
// message ends up in one log line.
const ownerShown = 64

// quoteOwner is id quoted, or for an id longer than ownerShown its first
// ownerShown bytes quoted and its length.
func quoteOwner(id string) string {
	if len(id) <= ownerShown {
		return fmt.Sprintf("%q", id)
	}
	return fmt.Sprintf("%q... (%d bytes)", id[:ownerShown], len(id))
}

// Unwrap makes errors.Is(err, ErrInvalidOwner) hold.
func (e *InvalidOwnerError) Unwrap() error { return ErrInvalidOwner }
