// Prompts, resources and resource templates of an upstream server: listed with its
// tools on every connection that is verified, prompt and resource-template
// definitions pinned like tool definitions, and got or read over a verified
// connection on which the definition served is the one listed.

package upstream

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/url"
	"slices"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
	"github.com/yosida95/uritemplate/v3"

	"github.com/wardenhq/warden/pin"
)

// Definition keys of prompts and resource templates in a connection's listed
// definitions (upstreamConn.defs), beside the tools' upstream names, which never
// contain ':' (see [ValidToolName]).
const (
	promptKeyPrefix   = "prompt:"
	templateKeyPrefix = "template:"
)

// Pin name prefixes: a prompt is pinned as PromptPinPrefix + its governed name, a
// resource template as TemplatePinPrefix + "<server>/<URI template>". Tool pins
// carry the governed tool name, which never contains ':'.
const (
	PromptPinPrefix   = "prompt:"
	TemplatePinPrefix = "resource-template:"
)

// maxCatalogItems bounds the prompts, the resources and the resource templates
// kept from one server's listing; the rest are refused and reported.
const maxCatalogItems = 10000

// Prompt is one prompt discovered on an upstream server that passed the checks. A
// Quarantined prompt must be hidden from clients and refused with
// [pin.QuarantineText].
type Prompt struct {
	// Name is the governed name: the server's ToolPrefix followed by Remote.
	Name string
	// Remote is the prompt's name on the upstream server.
	Remote string
	// Server is the server's name.
	Server string
	// Prompt is the definition as listed upstream. It is shared: do not modify it.
	Prompt *mcp.Prompt
	// Hash is the definition hash (see [pin.HashPrompt]).
	Hash string
	// Quarantined reports that the definition changed since it was approved, or that
	// its pin could not be checked.
	Quarantined bool

	def []byte // canonical definition, for re-checking the pin
}

// PinName is the name the prompt's definition is pinned under: "prompt:<governed name>".
func (p Prompt) PinName() string { return PromptPinPrefix + p.Name }

// Resource is one resource an upstream server listed. Resources are data, not
// definitions: they are not pinned, and the listing is taken as it is on every
// verification.
type Resource struct {
	// URI is the resource's URI as listed (absolute, served unchanged).
	URI string
	// Server is the server's name.
	Server string
	// Resource is the listing entry. It is shared: do not modify it.
	Resource *mcp.Resource
}

// ResourceTemplate is one resource template discovered on an upstream server that
// passed the checks. A Quarantined template must be hidden and refused.
type ResourceTemplate struct {
	// URITemplate is the RFC 6570 URI template as listed (served unchanged).
	URITemplate string
	// Server is the server's name.
	Server string
	// Template is the definition as listed upstream. It is shared: do not modify it.
	Template *mcp.ResourceTemplate
	// Hash is the definition hash (see [pin.HashResourceTemplate]).
	Hash string
	// Quarantined reports that the definition changed since it was approved, or that
	// its pin could not be checked.
	Quarantined bool

	def     []byte
	matcher *uritemplate.Template
}

// PinName is the name the template's definition is pinned under:
// "resource-template:<server>/<URI template>".
func (t ResourceTemplate) PinName() string {
	return TemplatePinPrefix + t.Server + "/" + t.URITemplate
}

// Matches reports whether uri is one the template expands to.
func (t ResourceTemplate) Matches(uri string) bool {
	return t.matcher != nil && t.matcher.Regexp().MatchString(uri)
}

// Variables returns the names of the template's variables, in order of first use.
func (t ResourceTemplate) Variables() []string {
	if t.matcher == nil {
		return nil
	}
	return t.matcher.Varnames()
}

// Expand returns the URI the template expands to with values (RFC 6570: a variable
// without a value expands to nothing, and values are percent-encoded as the
// variable's operator requires).
func (t ResourceTemplate) Expand(values map[string]string) (string, error) {
	if t.matcher == nil {
		return "", fmt.Errorf("resource template %q was not compiled", t.URITemplate)
	}
	vars := uritemplate.Values{}
	for k, v := range values {
		vars.Set(k, uritemplate.String(v))
	}
	return t.matcher.Expand(vars)
}

// CatalogProblem reports a prompt, resource or resource template refused at
// discovery; the server's other definitions are still served.
type CatalogProblem struct {
	// Server is the server's name; Kind "prompt", "resource" or "resource template";
	// Name the prompt's governed name, the resource's URI or the URI template.
	Server, Kind, Name string
	// Problem says what is wrong.
	Problem string
}

// String renders the problem for logs and operators.
func (p CatalogProblem) String() string {
	return fmt.Sprintf("server %q: %s %q refused: %s", p.Server, p.Kind, p.Name, p.Problem)
}

// catalog is what one listing of a server's prompts and resources gave.
type catalog struct {
	prompts   []Prompt
	resources []Resource
	templates []ResourceTemplate
	problems  []CatalogProblem
}

// Prompts returns the prompts of the last successful discovery (a copy; the
// definitions are shared), none while the server is down. Quarantined prompts are
// included, flagged.
func (u *Server) Prompts() []Prompt {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.downLocked() {
		return nil
	}
	return slices.Clone(u.prompts)
}

// Resources returns the resources of the last successful discovery (a copy), none
// while the server is down.
func (u *Server) Resources() []Resource {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.downLocked() {
		return nil
	}
	return slices.Clone(u.resources)
}

// ResourceTemplates returns the resource templates of the last successful discovery
// (a copy), none while the server is down. Quarantined templates are included,
// flagged.
func (u *Server) ResourceTemplates() []ResourceTemplate {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.downLocked() {
		return nil
	}
	return slices.Clone(u.templates)
}

// CatalogProblems returns the prompts, resources and templates refused by the last
// successful discovery (a copy).
func (u *Server) CatalogProblems() []CatalogProblem {
	u.mu.Lock()
	defer u.mu.Unlock()
	return slices.Clone(u.catalogProblems)
}

// listCatalog lists, over c (which the caller holds), the prompts and the resources
// and resource templates the server declared in its initialize result, following
// cursors. A server that declared neither gives an empty catalog; a list method it
// answers with method not found gives none of its kind (see unlisted), and any other
// listing the upstream refused serves none of its kind either (logged). On error
// (the connection failed) c has been released and closed.
func (u *Server) listCatalog(ctx context.Context, c *upstreamConn) (catalog, error) {
	var caps *mcp.ServerCapabilities
	if init := c.cs.InitializeResult(); init != nil {
		caps = init.Capabilities
	}
	var cat catalog
	if caps == nil {
		return cat, nil
	}
	var prompts []*mcp.Prompt
	var resources []*mcp.Resource
	var templates []*mcp.ResourceTemplate
	var err error
	if caps.Prompts != nil {
		prompts, err = listPages(ctx, u, c, "prompts/list", func(ctx context.Context, cursor string) ([]*mcp.Prompt, string, error) {
			res, err := c.cs.ListPrompts(ctx, &mcp.ListPromptsParams{Cursor: cursor})
			if unlisted(err) {
				return nil, "", nil
			}
			if err != nil || res == nil {
				return nil, "", orEmpty(err, "prompts/list")
			}
			return res.Prompts, res.NextCursor, nil
		})
		if err = u.servedAnyway(err); err != nil {
			return cat, err
		}
	}
	if caps.Resources != nil {
		resources, err = listPages(ctx, u, c, "resources/list", func(ctx context.Context, cursor string) ([]*mcp.Resource, string, error) {
			res, err := c.cs.ListResources(ctx, &mcp.ListResourcesParams{Cursor: cursor})
			if unlisted(err) {
				return nil, "", nil
			}
			if err != nil || res == nil {
				return nil, "", orEmpty(err, "resources/list")
			}
			return res.Resources, res.NextCursor, nil
		})
		if err = u.servedAnyway(err); err != nil {
			return cat, err
		}
		templates, err = listPages(ctx, u, c, "resources/templates/list", func(ctx context.Context, cursor string) ([]*mcp.ResourceTemplate, string, error) {
			res, err := c.cs.ListResourceTemplates(ctx, &mcp.ListResourceTemplatesParams{Cursor: cursor})
			if unlisted(err) {
				return nil, "", nil
			}
			if err != nil || res == nil {
				return nil, "", orEmpty(err, "resources/templates/list")
			}
			return res.ResourceTemplates, res.NextCursor, nil
		})
		if err = u.servedAnyway(err); err != nil {
			return cat, err
		}
	}
	u.checkPrompts(ctx, prompts, &cat)
	u.checkResources(resources, &cat)
	u.checkTemplates(ctx, templates, &cat)
	return cat, nil
}

// answeredError is a listing the upstream refused with a JSON-RPC error over a
// healthy connection, which listPages does not release.
type answeredError struct{ err error }

func (e answeredError) Error() string { return e.err.Error() }
func (e answeredError) Unwrap() error { return e.err }

// servedAnyway turns a listing the upstream refused into an empty one, logged: a
// server that declares prompts or resources but fails to list them still serves its
// tools, and none of what it could not list. Any other error is returned.
func (u *Server) servedAnyway(err error) error {
	var answered answeredError
	if errors.As(err, &answered) {
		u.log.Warn("the upstream refused a listing; none of it is served", slog.String("error", err.Error()))
		return nil
	}
	return err
}

// unlisted reports whether err is the upstream's answer that it does not know the
// list method (-32601, method not found): a server that declares resources but
// answers resources/templates/list that way (common among servers built on the
// low-level SDKs) has nothing of that kind to list, and its tools and other
// definitions are served. Any other error fails the listing.
func unlisted(err error) bool {
	var werr *jsonrpc.Error
	return upstreamAnswered(err) && errors.As(err, &werr) && werr.Code == jsonrpc.CodeMethodNotFound
}

// orEmpty returns err, or an error saying that method gave no result.
func orEmpty(err error, method string) error {
	if err != nil {
		return err
	}
	return fmt.Errorf("empty %s result", method)
}

// listPages follows one list method's cursors over c (bounded like tools/list). When
// the upstream refused the listing over a healthy connection (a JSON-RPC error, a
// repeated cursor, too many pages) the error is an answeredError and c stays held;
// on any other error c has been released (closed).
func listPages[T any](ctx context.Context, u *Server, c *upstreamConn, method string, page func(context.Context, string) ([]T, string, error)) ([]T, error) {
	var (
		items  []T
		cursor string
		seen   = map[string]bool{}
	)
	for n := 0; ; n++ {
		if n == maxListPages {
			return nil, answeredError{fmt.Errorf("server %q: %s did not end after %d pages", u.cfg.Name, method, maxListPages)}
		}
		var next string
		got, err := sdkGuard(func() ([]T, error) {
			got, n, err := page(ctx, cursor)
			next = n
			return got, err
		})
		if err != nil {
			switch {
			case upstreamAnswered(err):
				// The connection is healthy and stays held: the caller serves none of
				// this kind and goes on (see listCatalog).
				return nil, answeredError{fmt.Errorf("server %q: %s: %w", u.cfg.Name, method, err)}
			case ctx.Err() != nil || u.isClosed():
				u.release(c, false)
			default:
				u.failed(c, err.Error())
				u.release(c, false)
			}
			return nil, fmt.Errorf("server %q: %s: %w", u.cfg.Name, method, err)
		}
		items = append(items, got...)
		if next == "" {
			return items, nil
		}
		if seen[next] {
			return nil, answeredError{fmt.Errorf("server %q: %s repeated the cursor %q", u.cfg.Name, method, next)}
		}
		seen[next] = true
		cursor = next
	}
}

// checkPrompts refuses the prompts that cannot be served and pins the others.
func (u *Server) checkPrompts(ctx context.Context, listed []*mcp.Prompt, cat *catalog) {
	prefix := u.cfg.ToolPrefix()
	count := map[string]int{}
	for _, p := range listed {
		if p != nil {
			count[p.Name]++
		}
	}
	reported := map[string]bool{}
	for _, p := range listed {
		if p == nil {
			continue
		}
		name := prefix + p.Name
		refuse := func(problem string) {
			cat.problems = append(cat.problems, CatalogProblem{Server: u.cfg.Name, Kind: "prompt", Name: name, Problem: problem})
		}
		switch n := count[p.Name]; {
		case n > 1:
			if !reported[p.Name] {
				reported[p.Name] = true
				refuse(fmt.Sprintf("duplicate prompt name: %q is listed %d times", p.Name, n))
			}
			continue
		case p.Name == "" || !ValidToolName(name):
			refuse(fmt.Sprintf("prompt name %q is not a valid name (the governed name %q must be 1 to 128 letters, digits, '_', '.' or '-')", p.Name, name))
			continue
		case len(cat.prompts) == maxCatalogItems:
			refuse(fmt.Sprintf("the server lists more than %d prompts", maxCatalogItems))
			continue
		}
		if problem := checkPromptArguments(p.Arguments); problem != "" {
			refuse(problem)
			continue
		}
		hash, def, err := pin.HashPrompt(p)
		if err != nil {
			refuse("definition cannot be hashed: " + err.Error())
			continue
		}
		pr := Prompt{Name: name, Remote: p.Name, Server: u.cfg.Name, Prompt: p, Hash: hash, def: def}
		q, err := pin.Check(ctx, u.opts.Pins, u.sink, pr.PinName(), hash, def)
		if err != nil {
			u.log.Error("prompt definition pin could not be checked; the prompt is quarantined", slog.String("prompt", name), slog.String("error", err.Error()))
		}
		pr.Quarantined = q
		cat.prompts = append(cat.prompts, pr)
	}
}

// checkPromptArguments says why a prompt's argument list cannot be served, or "".
func checkPromptArguments(args []*mcp.PromptArgument) string {
	seen := map[string]bool{}
	for _, a := range args {
		switch {
		case a == nil || a.Name == "":
			return "an argument has no name"
		case seen[a.Name]:
			return fmt.Sprintf("argument %q is listed twice", a.Name)
		}
		seen[a.Name] = true
	}
	return ""
}

// checkResources refuses the resources that cannot be served: a URI that is not an
// absolute URI, and a URI listed twice (neither is served).
func (u *Server) checkResources(listed []*mcp.Resource, cat *catalog) {
	count := map[string]int{}
	for _, r := range listed {
		if r != nil {
			count[r.URI]++
		}
	}
	reported := map[string]bool{}
	for _, r := range listed {
		if r == nil {
			continue
		}
		refuse := func(problem string) {
			cat.problems = append(cat.problems, CatalogProblem{Server: u.cfg.Name, Kind: "resource", Name: r.URI, Problem: problem})
		}
		switch n := count[r.URI]; {
		case n > 1:
			if !reported[r.URI] {
				reported[r.URI] = true
				refuse(fmt.Sprintf("duplicate resource URI: listed %d times", n))
			}
			continue
		case !absoluteURI(r.URI):
			refuse("the URI is not an absolute URI")
			continue
		case len(cat.resources) == maxCatalogItems:
			refuse(fmt.Sprintf("the server lists more than %d resources", maxCatalogItems))
			continue
		}
		cat.resources = append(cat.resources, Resource{URI: r.URI, Server: u.cfg.Name, Resource: r})
	}
}

// absoluteURI reports whether s parses as a URI with a scheme, without control
// characters.
func absoluteURI(s string) bool {
	if s == "" || strings.ContainsFunc(s, func(r rune) bool { return r < 0x20 || r == 0x7f }) {
		return false
	}
	u, err := url.Parse(s)
	return err == nil && u.Scheme != ""
}

// checkTemplates refuses the resource templates that cannot be served (an invalid
// or relative URI template, one listed twice) and pins the others.
func (u *Server) checkTemplates(ctx context.Context, listed []*mcp.ResourceTemplate, cat *catalog) {
	count := map[string]int{}
	for _, t := range listed {
		if t != nil {
			count[t.URITemplate]++
		}
	}
	reported := map[string]bool{}
	for _, t := range listed {
		if t == nil {
			continue
		}
		refuse := func(problem string) {
			cat.problems = append(cat.problems, CatalogProblem{Server: u.cfg.Name, Kind: "resource template", Name: t.URITemplate, Problem: problem})
		}
		if n := count[t.URITemplate]; n > 1 {
			if !reported[t.URITemplate] {
				reported[t.URITemplate] = true
				refuse(fmt.Sprintf("duplicate URI template: listed %d times", n))
			}
			continue
		}
		if len(cat.templates) == maxCatalogItems {
			refuse(fmt.Sprintf("the server lists more than %d resource templates", maxCatalogItems))
			continue
		}
		m, err := sdkGuard(func() (*uritemplate.Template, error) { return uritemplate.New(t.URITemplate) })
		if err != nil {
			refuse("the URI template is invalid: " + err.Error())
			continue
		}
		if scheme, _, ok := strings.Cut(t.URITemplate, ":"); !ok || scheme == "" || strings.ContainsAny(scheme, "{}/?#") {
			refuse("the URI template does not start with a scheme")
			continue
		}
		hash, def, err := pin.HashResourceTemplate(t)
		if err != nil {
			refuse("definition cannot be hashed: " + err.Error())
			continue
		}
		rt := ResourceTemplate{URITemplate: t.URITemplate, Server: u.cfg.Name, Template: t, Hash: hash, def: def, matcher: m}
		q, err := pin.Check(ctx, u.opts.Pins, u.sink, rt.PinName(), hash, def)
		if err != nil {
			u.log.Error("resource template definition pin could not be checked; the template is quarantined", slog.String("template", t.URITemplate), slog.String("error", err.Error()))
		}
		rt.Quarantined = q
		cat.templates = append(cat.templates, rt)
	}
}

// addDefs records in defs the definitions of cat a connection listed.
func (cat *catalog) addDefs(defs map[string]string) {
	for _, p := range cat.prompts {
		defs[promptKeyPrefix+p.Remote] = p.Hash
	}
	for _, t := range cat.templates {
		defs[templateKeyPrefix+t.URITemplate] = t.Hash
	}
}

// sameCatalog reports whether the served catalog (prompts, resources, templates)
// equals cat in names, definitions and quarantine flags. u.mu is held.
func (u *Server) sameCatalogLocked(cat catalog) bool {
	return slices.EqualFunc(u.prompts, cat.prompts, func(a, b Prompt) bool {
		return a.Name == b.Name && a.Hash == b.Hash && a.Quarantined == b.Quarantined
	}) && slices.EqualFunc(u.resources, cat.resources, func(a, b Resource) bool {
		return a.URI == b.URI && sameResource(a.Resource, b.Resource)
	}) && slices.EqualFunc(u.templates, cat.templates, func(a, b ResourceTemplate) bool {
		return a.URITemplate == b.URITemplate && a.Hash == b.Hash && a.Quarantined == b.Quarantined
	})
}

// sameResource compares two listing entries by what a client is shown of them.
func sameResource(a, b *mcp.Resource) bool {
	return a.Name == b.Name && a.Title == b.Title && a.Description == b.Description &&
		a.MIMEType == b.MIMEType && a.Size == b.Size
}

// refreshCatalogPins is [Server.Refresh] for prompts and templates: it re-reads
// their pins and reports whether a quarantine flag changed.
func (u *Server) refreshCatalogPins(ctx context.Context) (changed bool, errs []error) {
	u.mu.Lock()
	prompts, templates := slices.Clone(u.prompts), slices.Clone(u.templates)
	u.mu.Unlock()
	for i := range prompts {
		q, err := pin.Check(ctx, u.opts.Pins, u.sink, prompts[i].PinName(), prompts[i].Hash, prompts[i].def)
		if err != nil {
			errs = append(errs, err)
		}
		if q != prompts[i].Quarantined {
			prompts[i].Quarantined, changed = q, true
		}
	}
	for i := range templates {
		q, err := pin.Check(ctx, u.opts.Pins, u.sink, templates[i].PinName(), templates[i].Hash, templates[i].def)
		if err != nil {
			errs = append(errs, err)
		}
		if q != templates[i].Quarantined {
			templates[i].Quarantined, changed = q, true
		}
	}
	if changed {
		u.mu.Lock()
		u.prompts, u.templates = prompts, templates
		u.mu.Unlock()
	}
	return changed, errs
}

// GetPrompt gets the prompt remote (its upstream name) with args over a pooled
// connection on which the prompt's listed definition is the one served, exactly as
// [Server.Call] calls a tool (same errors, same connection handling, [ErrNotSent]
// for anything before sending). A quarantined prompt is refused with a
// *[pin.QuarantinedError]. opts may be nil.
func (u *Server) GetPrompt(ctx context.Context, remote string, args map[string]string, opts *CallOptions) (*mcp.GetPromptResult, error) {
	res, sent, err := u.getPrompt(ctx, remote, args, opts)
	if err != nil && !sent {
		err = notSent(err)
	}
	return res, err
}

func (u *Server) getPrompt(ctx context.Context, remote string, args map[string]string, opts *CallOptions) (*mcp.GetPromptResult, bool, error) {
	if err := u.usable(); err != nil {
		return nil, false, err
	}
	u.mu.Lock()
	def, ok := u.servedLocked(promptKeyPrefix + remote)
	u.mu.Unlock()
	switch {
	case !ok:
		return nil, false, fmt.Errorf("server %q offers no prompt %q", u.cfg.Name, remote)
	case def.quarantined:
		return nil, false, &pin.QuarantinedError{Tool: def.name}
	}
	params := &mcp.GetPromptParams{Name: remote, Arguments: maps.Clone(args)}
	x := exchange{key: promptKeyPrefix + remote, what: fmt.Sprintf("prompt %q", remote), params: params, opts: opts}
	return roundTrip(ctx, u, x, func(ctx context.Context, c *upstreamConn) (*mcp.GetPromptResult, error) {
		return c.cs.GetPrompt(ctx, params)
	})
}

// ErrNoResource is wrapped by the error of a [Server.ReadResource] of a URI the
// server neither listed nor offers a (served) template for.
var ErrNoResource = errors.New("no such resource")

// ResourceRoute says how a server serves a URI: listed as a resource, through a
// resource template, or not at all.
type ResourceRoute struct {
	// Listed reports that the server listed the URI as a resource.
	Listed bool
	// Template is the template the URI matches when it is not listed: the first in
	// listing order that is not quarantined, or else the first quarantined one (which
	// refuses the read); nil when none matches.
	Template *ResourceTemplate
}

// Offers reports whether the route reaches the server.
func (r ResourceRoute) Offers() bool { return r.Listed || r.Template != nil }

// Route returns how the server of the last successful discovery serves uri; a
// server that is down serves none.
func (u *Server) Route(uri string) ResourceRoute {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.routeLocked(uri)
}

func (u *Server) routeLocked(uri string) ResourceRoute {
	if u.downLocked() {
		return ResourceRoute{}
	}
	for _, r := range u.resources {
		if r.URI == uri {
			return ResourceRoute{Listed: true}
		}
	}
	var route ResourceRoute
	for i := range u.templates {
		if !u.templates[i].Matches(uri) {
			continue
		}
		t := u.templates[i]
		if !t.Quarantined {
			return ResourceRoute{Template: &t}
		}
		if route.Template == nil {
			route.Template = &t
		}
	}
	return route
}

// ReadResource reads uri over a pooled connection, as [Server.Call] calls a tool
// (same errors, same connection handling, [ErrNotSent] before sending). uri must be
// one the server listed, or match one of its served resource templates (then the
// connection must have listed that template's definition as served); otherwise the
// error wraps [ErrNoResource] (and ErrNotSent). A URI matching only a quarantined
// template is refused with a *[pin.QuarantinedError]. opts may be nil.
func (u *Server) ReadResource(ctx context.Context, uri string, opts *CallOptions) (*mcp.ReadResourceResult, error) {
	res, sent, err := u.readResource(ctx, uri, opts)
	if err != nil && !sent {
		err = notSent(err)
	}
	return res, err
}

func (u *Server) readResource(ctx context.Context, uri string, opts *CallOptions) (*mcp.ReadResourceResult, bool, error) {
	if err := u.usable(); err != nil {
		return nil, false, err
	}
	route := u.Route(uri)
	var key string
	switch {
	case route.Listed:
	case route.Template == nil:
		return nil, false, fmt.Errorf("server %q: resource %q: %w (it is not listed and matches none of the server's resource templates)", u.cfg.Name, uri, ErrNoResource)
	case route.Template.Quarantined:
		return nil, false, &pin.QuarantinedError{Tool: route.Template.PinName()}
	default:
		key = templateKeyPrefix + route.Template.URITemplate
	}
	params := &mcp.ReadResourceParams{URI: uri}
	x := exchange{key: key, what: fmt.Sprintf("resource %q", uri), params: params, opts: opts}
	return roundTrip(ctx, u, x, func(ctx context.Context, c *upstreamConn) (*mcp.ReadResourceResult, error) {
		return c.cs.ReadResource(ctx, params)
	})
}

// Complete asks the server for completion values of a prompt argument or a resource
// template variable (params as the client sent them, with the prompt's upstream
// name in Ref.Name), over a verified pooled connection. A server that does not
// offer completions gives no values (an empty result, not an error).
func (u *Server) Complete(ctx context.Context, params *mcp.CompleteParams) (*mcp.CompleteResult, error) {
	if err := u.usable(); err != nil {
		return nil, notSent(err)
	}
	if !u.offers(func(c *mcp.ServerCapabilities) bool { return c.Completions != nil }) {
		return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: []string{}}}, nil
	}
	x := exchange{what: "completion", opts: nil}
	res, sent, err := roundTrip(ctx, u, x, func(ctx context.Context, c *upstreamConn) (*mcp.CompleteResult, error) {
		return c.cs.Complete(ctx, params)
	})
	if err != nil && !sent {
		err = notSent(err)
	}
	return res, err
}

// offers reports whether the capabilities of the last verified connection declare
// what has; they stay known while no connection is live (a restart), so a request
// then fails as the server's other requests do instead of being taken for one the
// server does not offer.
func (u *Server) offers(has func(*mcp.ServerCapabilities) bool) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	return u.caps != nil && has(u.caps)
}

// ErrNoSubscriptions is wrapped by the error of a [Server.Subscribe] to a server
// that does not offer resource subscriptions.
var ErrNoSubscriptions = errors.New("the server does not offer resource subscriptions")

// Subscribe subscribes the gateway to updates of uri on the server: resources/subscribe
// is sent on one connection, which then carries the server's
// notifications/resources/updated for it to [Options.OnResourceUpdated]. When that
// connection ends, the subscription is sent again in the background on another
// connection (a new one when none is live; after a failure, the restart's, before
// anything else goes out on it). Subscribing to a URI already subscribed sends
// nothing.
func (u *Server) Subscribe(ctx context.Context, uri string) error {
	if err := u.usable(); err != nil {
		return err
	}
	if !u.offers(func(c *mcp.ServerCapabilities) bool { return c.Resources != nil && c.Resources.Subscribe }) {
		return fmt.Errorf("server %q: %w", u.cfg.Name, ErrNoSubscriptions)
	}
	if u.subscribed(uri) {
		return nil
	}
	c, err := u.acquireVerified(ctx, "", 0)
	if err != nil {
		return err
	}
	// Checked again once no other subscription change is under way: a concurrent
	// Subscribe (or a renewal) may have sent it meanwhile.
	u.subMu.Lock()
	defer u.subMu.Unlock()
	if u.subscribed(uri) {
		u.release(c, true)
		return nil
	}
	if err := u.subscribeOn(ctx, c, uri); err != nil {
		u.release(c, upstreamAnswered(err) || stateless(c.cs))
		return fmt.Errorf("server %q: resources/subscribe %q: %w", u.cfg.Name, uri, err)
	}
	u.mu.Lock()
	u.subs[uri] = c
	u.mu.Unlock()
	u.release(c, true)
	return nil
}

// Unsubscribe ends the gateway's subscription to uri (resources/unsubscribe on the
// connection that holds it, when it is still live). Unsubscribing a URI not
// subscribed does nothing.
func (u *Server) Unsubscribe(ctx context.Context, uri string) error {
	u.subMu.Lock()
	defer u.subMu.Unlock()
	u.mu.Lock()
	holder, ok := u.subs[uri]
	delete(u.subs, uri)
	live := ok && holder != nil && !holder.dead
	u.mu.Unlock()
	if !live {
		return nil
	}
	_, err := sdkGuard(func() (struct{}, error) {
		return struct{}{}, holder.cs.Unsubscribe(ctx, &mcp.UnsubscribeParams{URI: uri})
	})
	if err != nil {
		return fmt.Errorf("server %q: resources/unsubscribe %q: %w", u.cfg.Name, uri, err)
	}
	return nil
}

// subscribed reports whether a live connection holds the subscription to uri.
func (u *Server) subscribed(uri string) bool {
	u.mu.Lock()
	defer u.mu.Unlock()
	holder := u.subs[uri]
	return holder != nil && !holder.dead
}

// resubscribe sends, on c (held by the caller, just verified), the subscriptions
// whose connection has ended.
func (u *Server) resubscribe(ctx context.Context, c *upstreamConn) {
	u.subMu.Lock()
	defer u.subMu.Unlock()
	u.mu.Lock()
	var lost []string
	for uri, holder := range u.subs {
		if holder == nil || holder.dead {
			lost = append(lost, uri)
		}
	}
	u.mu.Unlock()
	for _, uri := range lost {
		if err := u.subscribeOn(ctx, c, uri); err != nil {
			u.log.Warn("cannot renew a resource subscription on a new connection", slog.String("uri", uri), slog.String("error", err.Error()))
			continue
		}
		u.mu.Lock()
		if _, still := u.subs[uri]; still {
			u.subs[uri] = c
		}
		u.mu.Unlock()
	}
}

// holdsSubscriptionLocked reports whether c holds a subscription. u.mu is held.
func (u *Server) holdsSubscriptionLocked(c *upstreamConn) bool {
	for _, holder := range u.subs {
		if holder == c {
			return true
		}
	}
	return false
}

// renewSubscriptions sends the subscriptions whose connection ended again, on a
// verified connection: an idle one, or a new one when none is live (the worker runs
// it when a connection holding one ends). During a restart backoff it leaves them to
// the restart, whose verification sends them.
func (u *Server) renewSubscriptions(ctx context.Context) {
	u.mu.Lock()
	lost := false
	for _, holder := range u.subs {
		lost = lost || holder == nil || holder.dead
	}
	skip := !lost || u.closed
	u.mu.Unlock()
	if skip {
		return
	}
	rctx, cancel := context.WithTimeout(ctx, rediscoverTimeout)
	defer cancel()
	c, err := u.acquireVerified(rctx, "", 0)
	switch {
	case err == nil:
	case errors.Is(err, ErrServerRestarting):
		u.log.Debug("resource subscriptions wait for the restart", slog.String("error", err.Error()))
		return
	default:
		if ctx.Err() == nil {
			u.log.Warn("cannot renew the resource subscriptions of a connection that ended; the next verified connection sends them", slog.String("error", err.Error()))
		}
		return
	}
	u.resubscribe(rctx, c) // nothing left to send when acquireVerified verified c
	u.release(c, true)
}

// onResourceUpdated passes an upstream's notifications/resources/updated to
// OnResourceUpdated, for a URI the gateway subscribed to.
func (u *Server) onResourceUpdated(_ context.Context, req *mcp.ResourceUpdatedNotificationRequest) {
	if req == nil || req.Params == nil || u.opts.OnResourceUpdated == nil {
		return
	}
	u.mu.Lock()
	_, subscribed := u.subs[req.Params.URI]
	u.mu.Unlock()
	if !subscribed {
		u.log.Debug("resource update for a URI the gateway did not subscribe to; dropped", slog.String("uri", req.Params.URI))
		return
	}
	defer func() {
		if r := recover(); r != nil {
			u.log.Error("OnResourceUpdated panicked", slog.String("panic", fmt.Sprint(r)))
		}
	}()
	u.opts.OnResourceUpdated(u.cfg.Name, req.Params.URI)
}
