package inbox

import "time"

// SetFailDelay shortens the pause after a failed sign-in, so tests stay fast.
func SetFailDelay(ib *Inbox, d time.Duration) { ib.failDelay = d }

// PollerRunning reports whether the shared pending-set poller is running.
func PollerRunning(ib *Inbox) bool { return ib.hub.running() }
