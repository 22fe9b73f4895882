// The adapter from a discovered upstream tool to a tool of a [warden.Registry]: the
// one code path by which the gateway, an agent and any library user run an MCP tool
// through the pipeline, and the text a model reads of an upstream's result.

package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wardenhq/warden"
)

// Executable returns t, one of the tools of u's last discovery ([Server.Tools]), as a
// tool to register in a [warden.Registry]:
//
//   - its name is t's governed name (the server's prefix, default "mcp__<server>__",
//     followed by the upstream name), the one name rules, audit and events use;
//   - its description and input schema are the upstream's (the schema as checked at
//     discovery), its Source is "mcp:<server>";
//   - its Run calls the tool upstream with [Server.Call] and returns the result as
//     text ([ResultText]).
//
// What the pipeline, and so the model, gets from Run:
//
//   - an upstream result with isError set is a [warden.ErrorResult] holding
//     [ErrorText]: the tool failed in its own words, the model reads them as
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
func (u *Server) Executable(t Tool) warden.Executable {
	return u.ExecutableWith(t, nil)
}

// Executables returns, as [Server.Executable] makes them, the tools of u's last
// successful discovery that are not quarantined, in the order the server listed them.
// It is nil before a successful [Server.Discover].
func (u *Server) Executables() []warden.Executable {
	var out []warden.Executable
	for _, t := range u.Tools() {
		if !t.Quarantined {
			out = append(out, u.Executable(t))
		}
	}
	return out
}

// CallHook lets a caller (the gateway) take part in a call an executable runs: given
// the call's context it returns the call's options (nil: none) and, when not nil, a
// function told the upstream's result and the text the model reads of it.
type CallHook func(ctx context.Context) (*CallOptions, func(res *mcp.CallToolResult, text string))

// ExecutableWith is [Server.Executable] with a hook into each call (nil for none).
func (u *Server) ExecutableWith(t Tool, hook CallHook) warden.Executable {
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
				result func(*mcp.CallToolResult, string)
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
			switch {
			case res.NeedsInput():
				text = InputRequiredText(res.InputRequests)
			case res.IsError:
				text = ErrorText(t.Remote, t.Server, text)
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

// InputRequiredText is what the pipeline judges, and the audit records, of a
// result that asks the client for input first (protocol 2026-07-28's
// input_required): the ids and kinds of the input requests, in id order.
func InputRequiredText(reqs mcp.InputRequestMap) string {
	ids := slices.Sorted(maps.Keys(reqs))
	parts := make([]string, len(ids))
	for i, id := range ids {
		parts[i] = fmt.Sprintf("%s (%s)", id, InputMethod(reqs[id]))
	}
	return "[input required: the server asks the client for " + strings.Join(parts, ", ") + " before it answers]"
}

// InputMethod is the method of an input request: "elicitation/create",
// "sampling/createMessage" or "roots/list"; "" for a kind the SDK does not know.
func InputMethod(r mcp.InputRequest) string {
	switch r.(type) {
	case *mcp.ElicitParams:
		return "elicitation/create"
	case *mcp.CreateMessageParams, *mcp.CreateMessageWithToolsParams: //lint:ignore SA1019 upstreams still ask for sampling
		return "sampling/createMessage"
	case *mcp.ListRootsParams: //lint:ignore SA1019 upstreams still ask for roots
		return "roots/list"
	}
	return ""
}

// ErrorText is what the model reads when an upstream tool returned an error
// result.
func ErrorText(tool, server, text string) string {
	return fmt.Sprintf("MCP tool '%s' (server '%s') returned an error: %s", tool, server, text)
}

// ResultText renders an MCP tool result as text: text content joined by newlines,
// other content described in brackets, and structured content as JSON when there is
// no text.
func ResultText(res *mcp.CallToolResult) string {
	var b strings.Builder
	for i, c := range res.Content {
		if i > 0 {
			b.WriteByte('\n')
		}
		switch c := c.(type) {
		case *mcp.TextContent:
			b.WriteString(c.Text)
		case *mcp.ImageContent:
			fmt.Fprintf(&b, "[image %s, %d bytes]", c.MIMEType, len(c.Data))
		case *mcp.AudioContent:
			fmt.Fprintf(&b, "[audio %s, %d bytes]", c.MIMEType, len(c.Data))
		case *mcp.ResourceLink:
			fmt.Fprintf(&b, "[resource %s]", c.URI)
		case *mcp.EmbeddedResource:
			if c.Resource != nil && c.Resource.Text != "" {
				b.WriteString(c.Resource.Text)
			} else if c.Resource != nil {
				fmt.Fprintf(&b, "[resource %s]", c.Resource.URI)
			}
		default:
			b.WriteString("[content]")
		}
	}
	if len(res.Content) == 0 && res.StructuredContent != nil {
		if data, err := json.Marshal(res.StructuredContent); err == nil {
			b.Write(data)
		}
	}
	return b.String()
}
