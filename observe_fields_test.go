package redisync

import (
	"reflect"
	"testing"

	"github.com/redisync/redisync/internal/obs"
)

// The root Event is declared here, with documented fields, and the engine's
// internal event converted to it field by field (observerAdapter): a field
// added to one and not the other would silently never reach users.
func TestEventHasEveryFieldOfTheEngineEvent(t *testing.T) {
	root, inner := reflect.TypeFor[Event](), reflect.TypeFor[obs.Event]()
	if root.NumField() != inner.NumField() {
		t.Fatalf("redisync.Event has %d fields, obs.Event %d", root.NumField(), inner.NumField())
	}
	for i := range inner.NumField() {
		f := inner.Field(i)
		g, ok := root.FieldByName(f.Name)
		if !ok {
			t.Fatalf("redisync.Event lacks %s", f.Name)
		}
		if f.Name != "Kind" && g.Type != f.Type {
			t.Fatalf("field %s: %v in redisync.Event, %v in obs.Event", f.Name, g.Type, f.Type)
		}
	}
	// Every field is copied by the adapter.
	full := obs.Event{Kind: obs.Lost, Primitive: "p", Name: "n", Wait: 1, Latency: 2, Waited: true, Held: 3, Count: 4, Err: ErrLockLost}
	var got Event
	observerAdapter{ObserverFunc(func(ev Event) { got = ev })}.Observe(full)
	want := Event{Kind: EventLost, Primitive: "p", Name: "n", Wait: 1, Latency: 2, Waited: true, Held: 3, Count: 4, Err: ErrLockLost}
	if got != want {
		t.Fatalf("adapter copied %+v, want %+v", got, want)
	}
	if EventRenewFailed.String() != "renew_failed" {
		t.Fatalf("EventRenewFailed.String() = %q", EventRenewFailed.String())
	}
}
