package gateway

import "context"

// CallOrigin is what the gateway knows of a governed call beyond its events: the
// upstream server it goes to, the tool's name there, and the caller's role. A sink
// reads it from the context of the call's events with [CallOriginOf], to label what
// it records (an OpenTelemetry span, say). It holds names only, never values.
type CallOrigin struct {
	// Server is the upstream server's name in the gateway config.
	Server string
	// RemoteTool is the tool's name on that server ("" for a prompt or resource).
	RemoteTool string
	// Role is the role the caller's entry in the config names ("" when it names none
	// and the policy's active role applies).
	Role string
}

// CallOriginOf returns the origin of the call whose event's context ctx is. It
// reports false for a context that is not a governed call's (a call the gateway
// refused before the pipeline, or an event of no call).
func CallOriginOf(ctx context.Context) (CallOrigin, bool) {
	slot, _ := ctx.Value(slotKey{}).(*resultSlot)
	if slot == nil {
		return CallOrigin{}, false
	}
	return CallOrigin{Server: slot.server, RemoteTool: slot.remote, Role: slot.role}, true
}
