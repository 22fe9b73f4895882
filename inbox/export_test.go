package inbox

import (
	"context"
	"crypto/sha256"
	"time"
)

// SetFailDelay shortens the pause after a failed sign-in, so tests stay fast.
func SetFailDelay(ib *Inbox, d time.Duration) { ib.failDelay = d }

// PollerRunning reports whether the shared pending-set poller is running.
func PollerRunning(ib *Inbox) bool { return ib.hub.running() }

// SweepSessions runs one sweep of the store's ended and expired sessions as if the
// inbox's clock read now.
func SweepSessions(ib *Inbox, now time.Time) (int, error) {
	return ib.sessions.sweepStore(context.Background(), now)
}

// SessionCheckpoint is the store checkpoint id of the session with this cookie value.
func SessionCheckpoint(cookie string) string { return sessionID(sha256.Sum256([]byte(cookie))) }

// OnSweep makes fn hear of every background sweep of the store's sessions once it
// ended. Set it before the inbox serves a request.
func OnSweep(ib *Inbox, fn func(n int, err error)) { ib.sessions.afterSweep = fn }
