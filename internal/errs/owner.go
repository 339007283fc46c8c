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
	return fmt.Sprintf("%s %q: %s(%q): %s: %v", e.Package, e.Name, e.Option, e.Owner, e.Reason, ErrInvalidOwner)
}

// Unwrap makes errors.Is(err, ErrInvalidOwner) hold.
func (e *InvalidOwnerError) Unwrap() error { return ErrInvalidOwner }
