// The adapters from an upstream's prompts and resources to tools of a
// [warden.Registry]: a prompts/get and a resources/read are calls the pipeline
// decides, under the names policies give them.

package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wardenhq/warden"
)

// Target prefixes of the calls [Server.PromptExecutable] and
// [Server.ResourceExecutable] make: the names rules, roles, conditions, audit and
// events use.
const (
	PromptTargetPrefix   = "prompt:"
	ResourceTargetPrefix = "resource:"
)

// PromptTarget returns the call target of getting the prompt whose governed name is
// name: "prompt:<name>".
func PromptTarget(name string) string { return PromptTargetPrefix + name }

// ResourceTarget returns the call target of reading a resource of server:
// "resource:<server>". The URI is the call's "uri" argument.
func ResourceTarget(server string) string { return ResourceTargetPrefix + server }

// ResultHook lets a caller (the gateway) take part in a prompts/get or a
// resources/read an executable runs: given the call's context it returns the
// request's options (nil: none) and, when not nil, a function told the upstream's
// result (a *mcp.GetPromptResult or a *mcp.ReadResourceResult) and the text the
// pipeline judged of it.
type ResultHook func(ctx context.Context) (*CallOptions, func(res mcp.Result, text string))

// PromptExecutable returns p, one of the prompts of u's last discovery, as a tool to
// register in a [warden.Registry]: named [PromptTarget](p.Name), with the prompt's
// description, an input schema that takes exactly the prompt's arguments as strings
// (the required ones required, no other property), Source "mcp:<server>". Its Run
// gets the prompt with [Server.GetPrompt] and returns the messages as text
// ([PromptText]); errors are classified as for [Server.Executable] (ErrNotSent wraps
// [warden.ErrNotExecuted]). hook may be nil.
func (u *Server) PromptExecutable(p Prompt, hook ResultHook) warden.Executable {
	var description string
	if p.Prompt != nil {
		description = p.Prompt.Description
	}
	return warden.Executable{
		Tool: warden.Tool{
			Name:        PromptTarget(p.Name),
			Description: description,
			InputSchema: promptSchema(p.Prompt),
			Source:      "mcp:" + p.Server,
		},
		Run: func(ctx context.Context, args warden.Args, _ *warden.Credential) (any, error) {
			values := make(map[string]string, args.Len())
			for k, v := range args.Fields() {
				s, ok := v.(string)
				if !ok {
					// The schema admits strings only; never send a value it did not judge.
					return nil, fmt.Errorf("%w: prompt argument %q is not a string", warden.ErrNotExecuted, k)
				}
				values[k] = s
			}
			var (
				opts   *CallOptions
				result func(mcp.Result, string)
			)
			if hook != nil {
				opts, result = hook(ctx)
			}
			res, err := u.GetPrompt(ctx, p.Remote, values, opts)
			if errors.Is(err, ErrNotSent) {
				return nil, fmt.Errorf("%w: %w", warden.ErrNotExecuted, err)
			}
			if err != nil {
				return nil, err
			}
			text := PromptText(res)
			if res.NeedsInput() {
				text = InputRequiredText(res.InputRequests)
			}
			if result != nil {
				result(res, text)
			}
			return text, nil
		},
	}
}

// promptSchema is the input schema of a prompt's arguments: every argument a string,
// the required ones required, nothing else.
func promptSchema(p *mcp.Prompt) json.RawMessage {
	props := map[string]any{}
	required := []string{}
	if p != nil {
		for _, a := range p.Arguments {
			prop := map[string]any{"type": "string"}
			if a.Description != "" {
				prop["description"] = a.Description
			}
			props[a.Name] = prop
			if a.Required {
				required = append(required, a.Name)
			}
		}
	}
	raw, _ := json.Marshal(map[string]any{
		"type": "object", "properties": props, "required": required, "additionalProperties": false,
	})
	return raw
}

// resourceSchema is the input schema of a resource read: one URI.
var resourceSchema = json.RawMessage(`{"type":"object","properties":{"uri":{"type":"string","minLength":1}},"required":["uri"],"additionalProperties":false}`)

// ResourceExecutable returns reading u's resources as one tool to register in a
// [warden.Registry]: named [ResourceTarget](server), taking {"uri": "..."}, Source
// "mcp:<server>". Its Run reads the URI with [Server.ReadResource] and returns the
// contents as text ([ResourceText]); errors are classified as for
// [Server.Executable]. hook may be nil.
func (u *Server) ResourceExecutable(hook ResultHook) warden.Executable {
	return warden.Executable{
		Tool: warden.Tool{
			Name:        ResourceTarget(u.cfg.Name),
			Description: "Read a resource of the MCP server " + u.cfg.Name,
			InputSchema: resourceSchema,
			Source:      "mcp:" + u.cfg.Name,
		},
		Run: func(ctx context.Context, args warden.Args, _ *warden.Credential) (any, error) {
			uri, ok := args.String("uri")
			if !ok {
				return nil, fmt.Errorf("%w: the uri argument is not a string", warden.ErrNotExecuted)
			}
			var (
				opts   *CallOptions
				result func(mcp.Result, string)
			)
			if hook != nil {
				opts, result = hook(ctx)
			}
			res, err := u.ReadResource(ctx, uri, opts)
			if errors.Is(err, ErrNotSent) {
				return nil, fmt.Errorf("%w: %w", warden.ErrNotExecuted, err)
			}
			if err != nil {
				return nil, err
			}
			text := ResourceText(res)
			if res.NeedsInput() {
				text = InputRequiredText(res.InputRequests)
			}
			if result != nil {
				result(res, text)
			}
			return text, nil
		},
	}
}

// PromptText renders a prompt's messages as the text the pipeline judges: each
// message as "<role>: <content>", text content as is, other content described.
func PromptText(res *mcp.GetPromptResult) string {
	var b strings.Builder
	for i, m := range res.Messages {
		if m == nil {
			continue
		}
		if i > 0 {
			b.WriteString("\n\n")
		}
		b.WriteString(string(m.Role))
		b.WriteString(": ")
		b.WriteString(contentText(m.Content))
	}
	return b.String()
}

// ResourceText renders a resource's contents as the text the pipeline judges: text
// contents as they are, binary contents described by URI, MIME type and size.
func ResourceText(res *mcp.ReadResourceResult) string {
	var b strings.Builder
	for i, c := range res.Contents {
		if c == nil {
			continue
		}
		if i > 0 {
			b.WriteString("\n\n")
		}
		if c.Blob != nil {
			fmt.Fprintf(&b, "[binary resource %s, %s, %d bytes]", c.URI, orUnknown(c.MIMEType), len(c.Blob))
			continue
		}
		b.WriteString(c.Text)
	}
	return b.String()
}

func contentText(c mcp.Content) string {
	switch c := c.(type) {
	case *mcp.TextContent:
		return c.Text
	case *mcp.ImageContent:
		return fmt.Sprintf("[image, %s, %d bytes]", orUnknown(c.MIMEType), len(c.Data))
	case *mcp.AudioContent:
		return fmt.Sprintf("[audio, %s, %d bytes]", orUnknown(c.MIMEType), len(c.Data))
	case *mcp.EmbeddedResource:
		if c.Resource == nil {
			return "[embedded resource]"
		}
		if c.Resource.Blob != nil {
			return fmt.Sprintf("[embedded resource %s, %s, %d bytes]", c.Resource.URI, orUnknown(c.Resource.MIMEType), len(c.Resource.Blob))
		}
		return c.Resource.Text
	case *mcp.ResourceLink:
		return "[resource link " + c.URI + "]"
	case nil:
		return ""
	}
	return fmt.Sprintf("[%T content]", c)
}

func orUnknown(mime string) string {
	if mime == "" {
		return "unknown type"
	}
	return mime
}
