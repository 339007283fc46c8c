// Package lifecycle holds no code: its test is the model-based test of the
// hold lifecycle of every primitive (rlock, fairlock, both rwlock sides,
// semaphore permits, multilock, redlock), a pgregory.net/rapid state machine
// run against real redis-servers. See model_test.go.
package lifecycle
