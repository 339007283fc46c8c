package redlock

import "time"

// PauseAfterReplies makes m sleep d after phase 1's replies are in and
// before the validity is computed (a client paused there).
func (m *Mutex) PauseAfterReplies(d time.Duration) { m.afterReplies = func() { time.Sleep(d) } }
