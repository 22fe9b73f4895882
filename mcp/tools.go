// The adapter from a discovered upstream tool to a tool of a [warden.Registry]: the
// one code path by which the gateway, an agent and any library user run an MCP tool
// through the pipeline. Also the in-memory pin store for library use.

package mcp

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	sdk "github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/store"
)

// Executable returns t, one of the tools of u's last discovery ([Upstream.Tools]), as a
// tool to register in a [warden.Registry]:
//
//   - its name is t's governed name (the server's prefix, default "mcp__<server>__",
//     followed by the upstream name), the one name rules, audit and events use;
//   - its description and input schema are the upstream's (the schema as checked at
//     discovery), its Source is "mcp:<server>";
//   - its Run calls the tool upstream with [Upstream.Call] and returns the result as
//     text ([ResultText]).
//
// What the pipeline, and so the model, gets from Run:
//
//   - an upstream result with isError set is a [warden.ErrorResult] holding
//     [UpstreamErrorText]: the tool failed in its own words, the model reads them as
//     the tool result, the call is audited as failed;
//   - an error from before the request began to be sent (the tool is quarantined, no
//     connection could be had, the server is restarting: see [ErrNotSent]) wraps
//     [warden.ErrNotExecuted], so the call is recorded as never executed;
//   - any other error (the connection failed mid-call, a protocol error, a timeout) is
//     returned as is: the request may have reached the server.
//
// Admission, discovery and pin checks are u's: the Run of a tool that has since been
// quarantined or removed upstream refuses unsent. Register the tool before the
// registry is bound; the call is then governed like any other tool's.
func (u *Upstream) Executable(t UpstreamTool) warden.Executable {
	return u.executable(t, nil)
}

// Executables returns, as [Upstream.Executable] makes them, the tools of u's last
// successful discovery that are not quarantined, in the order the server listed them.
// It is nil before a successful [Upstream.Discover].
func (u *Upstream) Executables() []warden.Executable {
	var out []warden.Executable
	for _, t := range u.Tools() {
		if !t.Quarantined {
			out = append(out, u.Executable(t))
		}
	}
	return out
}

// callHook lets the gateway take part in a call an executable runs: given the call's
// context it returns the call's options (nil: none) and, when not nil, a function told
// the upstream's result and the text the model reads of it.
type callHook func(ctx context.Context) (*CallOptions, func(res *sdk.CallToolResult, text string))

// executable is [Upstream.Executable] with the gateway's hook (nil for none).
func (u *Upstream) executable(t UpstreamTool, hook callHook) warden.Executable {
	var description string
	if t.Tool != nil {
		description = t.Tool.Description
	}
	return warden.Executable{
		Tool: warden.Tool{
			Name:        t.Name,
			Description: description,
			InputSchema: t.InputSchema,
			Source:      "mcp:" + t.Server,
		},
		Run: func(ctx context.Context, args warden.Args, _ *warden.Credential) (any, error) {
			var (
				opts   *CallOptions
				result func(*sdk.CallToolResult, string)
			)
			if hook != nil {
				opts, result = hook(ctx)
			}
			res, err := u.Call(ctx, t.Remote, args.AppendJSON(nil), opts)
			if errors.Is(err, ErrNotSent) {
				// Nothing reached the upstream: the call is recorded as not executed.
				return nil, fmt.Errorf("%w: %w", warden.ErrNotExecuted, err)
			}
			if err != nil {
				return nil, err
			}
			text := ResultText(res)
			if res.IsError {
				text = UpstreamErrorText(t.Remote, t.Server, text)
			}
			if result != nil {
				result(res, text)
			}
			if res.IsError {
				// The tool failed in its own words: the audit says failed, the model
				// reads the upstream's text.
				return warden.ErrorResult{Text: text}, nil
			}
			return text, nil
		},
	}
}

// MemoryPins is a [PinStore] held in memory, for library use without a database: the
// first definition of each tool seen is trusted, and a change while the process runs
// (after a tools/list_changed, or on another connection) quarantines the tool. Nothing
// survives the process, so a definition that changed between two runs is not noticed;
// use a [store.Store] for pins that last (and `warden pins` to review changes).
//
// The zero value is empty and ready to use. A MemoryPins is safe for concurrent use.
// Pins are copied in and out: changing a returned pin changes nothing stored.
type MemoryPins struct {
	mu   sync.Mutex
	pins map[string]store.Pin
}

var _ PinStore = (*MemoryPins)(nil)

// GetPin returns the pin of the tool name, or an error wrapping [store.ErrNotFound].
func (m *MemoryPins) GetPin(_ context.Context, name string) (store.Pin, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p, ok := m.pins[name]
	if !ok {
		return store.Pin{}, fmt.Errorf("pin %q: %w", name, store.ErrNotFound)
	}
	return clonePin(p), nil
}

// PutPin stores p under p.Name, replacing any pin of that name.
func (m *MemoryPins) PutPin(_ context.Context, p store.Pin) error {
	if p.Name == "" {
		return errors.New("pin: the tool name is required")
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.pins == nil {
		m.pins = map[string]store.Pin{}
	}
	m.pins[p.Name] = clonePin(p)
	return nil
}

func clonePin(p store.Pin) store.Pin {
	p.Definition = slices.Clone(p.Definition)
	p.Pending = slices.Clone(p.Pending)
	return p
}
