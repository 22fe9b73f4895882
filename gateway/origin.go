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

// CallOriginOf returns the origin of the call whose event's context ctx is. A tool
// call the gateway refused before the pipeline (a hidden tool, a halted session) has
// its server and remote tool but no role. It reports false for a context of no call
// the gateway knows the origin of.
func CallOriginOf(ctx context.Context) (CallOrigin, bool) {
	if slot, _ := ctx.Value(slotKey{}).(*resultSlot); slot != nil {
		return CallOrigin{Server: slot.server, RemoteTool: slot.remote, Role: slot.role}, true
	}
	o, ok := ctx.Value(originKey{}).(CallOrigin)
	return o, ok
}

type originKey struct{}

// withRefusedOrigin gives the context of a refusal made before the pipeline the
// origin of the tool refused, when it is a served tool and the context carries no
// call's slot.
func withRefusedOrigin(ctx context.Context, st *gatewayState, name string) context.Context {
	if slot, _ := ctx.Value(slotKey{}).(*resultSlot); slot != nil {
		return ctx
	}
	gt, ok := st.tools[name]
	if !ok {
		return ctx
	}
	return context.WithValue(ctx, originKey{}, CallOrigin{Server: gt.tool.Server, RemoteTool: gt.tool.Remote})
}
