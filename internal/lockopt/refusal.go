package lockopt

// A handle of this module whose name, owner id, lease or count cannot be
// used returns one error from every method, without I/O: its refusal. A
// multilock asks its components for theirs before its first round, so
// that a refused component is reported at once — not as contention when a
// component before it in canonical order is busy, and not after the free
// ones before it were granted and given back. The lock types carry no
// method for it (a method of an internal type could not be unexported
// across packages, and an exported one would be public API): each lock
// package registers, from its init, a function that recognises its
// handles, as rlock registers its one-script description (hold.MemberOf).

var refusals []func(l any) (err error, ok bool)

// RegisterRefusal is called from a lock package's init with a function
// that recognises the package's handles (ok) and returns a handle's
// refusal, nil when it has none.
func RegisterRefusal(f func(l any) (err error, ok bool)) { refusals = append(refusals, f) }

// Refusal returns the error every method of l returns without I/O, nil
// when l has none or is no handle a registered package recognises (a
// Locker of the caller's own).
func Refusal(l any) error {
	for _, f := range refusals {
		if err, ok := f(l); ok {
			return err
		}
	}
	return nil
}
