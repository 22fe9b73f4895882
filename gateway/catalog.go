// Prompts, resources and resource templates of the admitted upstreams, served and
// governed like tools: bound per revision, installed on the fronts, listed per
// caller, and got or read as calls the pipeline decides.

package gateway

import (
	"context"
	"encoding/json"
	"fmt"
	"log/slog"
	"net/url"
	"slices"
	"sort"
	"strings"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/upstream"
)

// CodeRefused is the JSON-RPC error code of a prompts/get or resources/read the
// gateway refused (by policy, because nobody approved it, because the session is
// halted, or because the upstream failed): the message is the text the model reads.
// A tools/call refusal is a tool result with isError instead.
const CodeRefused = -32010

type governedPrompt struct {
	up     *upstream.Server
	prompt upstream.Prompt
}

type governedResource struct {
	up  *upstream.Server
	res upstream.Resource
}

type governedTemplate struct {
	up   *upstream.Server
	tmpl upstream.ResourceTemplate
}

// catalogState is the part of a revision that serves prompts and resources.
type catalogState struct {
	prompts     map[string]*governedPrompt // by governed name
	promptNames []string                   // sorted
	resources   map[string]*governedResource
	uris        []string           // served resource URIs, sorted
	templates   []governedTemplate // by server name, then as listed
	readers     map[string]*upstream.Server
	readerNames []string // servers whose resources are read, sorted
}

// buildCatalog collects the catalog of the upstreams (names sorted). A prompt name,
// a resource URI or a URI template that an earlier server already serves is refused
// for the later one and logged.
func (g *Gateway) buildCatalog(ups map[string]*upstreamEntry, names []string) catalogState {
	cs := catalogState{
		prompts:   map[string]*governedPrompt{},
		resources: map[string]*governedResource{},
		readers:   map[string]*upstream.Server{},
	}
	templateOwner := map[string]string{}
	for _, name := range names {
		e := ups[name]
		if e.up == nil {
			continue
		}
		for _, p := range e.up.Prompts() {
			if prev, ok := cs.prompts[p.Name]; ok {
				g.log.Error("prompt refused: its name is already served by another server", "prompt", p.Name, "server", p.Server, "served_by", prev.prompt.Server)
				continue
			}
			cs.prompts[p.Name] = &governedPrompt{up: e.up, prompt: p}
			cs.promptNames = append(cs.promptNames, p.Name)
		}
		reads := false
		for _, r := range e.up.Resources() {
			if prev, ok := cs.resources[r.URI]; ok {
				g.log.Error("resource refused: its URI is already served by another server", "uri", r.URI, "server", r.Server, "served_by", prev.res.Server)
				continue
			}
			cs.resources[r.URI] = &governedResource{up: e.up, res: r}
			cs.uris = append(cs.uris, r.URI)
			reads = true
		}
		for _, t := range e.up.ResourceTemplates() {
			if owner, ok := templateOwner[t.URITemplate]; ok {
				g.log.Error("resource template refused: it is already served by another server", "template", t.URITemplate, "server", t.Server, "served_by", owner)
				continue
			}
			templateOwner[t.URITemplate] = t.Server
			cs.templates = append(cs.templates, governedTemplate{up: e.up, tmpl: t})
			reads = true
		}
		if reads {
			cs.readers[name] = e.up
			cs.readerNames = append(cs.readerNames, name)
		}
	}
	sort.Strings(cs.promptNames)
	sort.Strings(cs.uris)
	return cs
}

// catalogExecutables returns the registry entries of the catalog: one per prompt,
// one resource reader per server that has resources or templates.
func (cs *catalogState) executables() []warden.Executable {
	out := make([]warden.Executable, 0, len(cs.promptNames)+len(cs.readerNames))
	for _, name := range cs.promptNames {
		gp := cs.prompts[name]
		out = append(out, gp.up.PromptExecutable(gp.prompt, catalogHook))
	}
	for _, name := range cs.readerNames {
		out = append(out, cs.readers[name].ResourceExecutable(catalogHook))
	}
	return out
}

// catalogHook is the [upstream.ResultHook] of the catalog's executables: the call's
// options from the gateway's slot, and the upstream's full result into it.
func catalogHook(ctx context.Context) (*upstream.CallOptions, func(mcp.Result, string)) {
	slot, _ := ctx.Value(slotKey{}).(*resultSlot)
	if slot == nil {
		return nil, nil
	}
	return slot.options(), func(res mcp.Result, text string) { slot.other, slot.text = res, text }
}

// quarantinedServers returns the upstreams holding a quarantined prompt or template.
func (cs *catalogState) quarantinedServers() []*upstream.Server {
	var ups []*upstream.Server
	for _, name := range cs.promptNames {
		if gp := cs.prompts[name]; gp.prompt.Quarantined && !slices.Contains(ups, gp.up) {
			ups = append(ups, gp.up)
		}
	}
	for _, gt := range cs.templates {
		if gt.tmpl.Quarantined && !slices.Contains(ups, gt.up) {
			ups = append(ups, gt.up)
		}
	}
	return ups
}

// visiblePrompt reports whether cl may see the prompt name: served, not
// quarantined, and the role's policy may allow getting it. why is for the audit log
// ("" for a name nobody serves).
func visiblePrompt(st *gatewayState, cl Client, name string) (ok bool, why string) {
	gp, served := st.cat.prompts[name]
	view := st.views[cl.Role]
	switch {
	case !served || view == nil:
		return false, ""
	case gp.prompt.Quarantined:
		return false, "prompt definition changed since it was approved"
	case !view.pol.IsAllowed(upstream.PromptTarget(name)):
		return false, fmt.Sprintf("prompt hidden from the caller: not allowed to role %q", cl.Role)
	}
	return true, ""
}

// mayRead reports whether cl's role policy may allow reading resources of server.
func mayRead(st *gatewayState, cl Client, server string) bool {
	view := st.views[cl.Role]
	return view != nil && view.pol.IsAllowed(upstream.ResourceTarget(server))
}

// resourceListed reports whether cl is shown the listed resource r: its server's
// resources may be read by the role, and the policy does not deny reading exactly
// this URI (an ask is shown: the read asks a person).
func resourceListed(ctx context.Context, st *gatewayState, cl Client, r upstream.Resource) bool {
	if !mayRead(st, cl, r.Server) {
		return false
	}
	view := st.views[cl.Role]
	args, err := warden.ParseArgs(uriArgs(r.URI))
	if err != nil {
		return false
	}
	d, err := view.pol.Check(ctx, warden.Request{
		Capability: warden.CapToolCall,
		Target:     upstream.ResourceTarget(r.Server),
		Args:       args,
		Identity:   warden.Identity{Tenant: cl.Tenant, Principal: cl.Principal},
	})
	return err == nil && (d.Effect == warden.Allow || d.Effect == warden.Ask)
}

// uriArgs is the arguments of reading uri: {"uri": uri}.
func uriArgs(uri string) json.RawMessage {
	b, _ := json.Marshal(map[string]string{"uri": uri})
	return b
}

// routeResource returns the upstream serving uri in st: the server that listed it,
// or else the one server with a served template matching it. Templates of servers
// the caller may not read (readable reports false) are not the caller's to see: a URI
// matching templates of two servers is refused (the gateway cannot tell which server
// it names) only when the caller may read at least two of them, naming only those; of
// one it may read, it is that server's; of none, it is the first server's (which then
// refuses it as hidden, as for one server). When only a quarantined template matches,
// quarantined names its server (and no server serves the URI).
func routeResource(st *gatewayState, uri string, readable func(server string) bool) (up *upstream.Server, quarantined string, err error) {
	if r, ok := st.cat.resources[uri]; ok {
		return r.up, "", nil
	}
	var (
		servers []string
		ups     []*upstream.Server
	)
	for _, gt := range st.cat.templates {
		if !gt.tmpl.Matches(uri) {
			continue
		}
		if gt.tmpl.Quarantined {
			quarantined = gt.tmpl.Server
			continue
		}
		if !slices.Contains(servers, gt.tmpl.Server) {
			servers = append(servers, gt.tmpl.Server)
			ups = append(ups, gt.up)
		}
	}
	switch len(servers) {
	case 0:
		return nil, quarantined, nil
	case 1:
		return ups[0], "", nil
	}
	var shown []string
	for i, server := range servers {
		if readable(server) {
			shown = append(shown, server)
			up = ups[i]
		}
	}
	switch len(shown) {
	case 0:
		return ups[0], "", nil
	case 1:
		return up, "", nil
	}
	return nil, "", &jsonrpc.Error{Code: CodeRefused, Message: fmt.Sprintf(
		"The resource %s matches resource templates of the servers %s, so the gateway cannot tell which one to read it from. Nothing was read.",
		uri, strings.Join(shown, " and "))}
}

// refused is the JSON-RPC error of a refused prompts/get or resources/read.
func refused(text string) error { return &jsonrpc.Error{Code: CodeRefused, Message: text} }

// unknownPrompt is the SDK's own error for a prompt name it does not serve, so a
// hidden prompt answers exactly like one that does not exist.
func unknownPrompt(name string) error {
	return &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown prompt %q", name)}
}

// getPrompt serves one prompts/get through the pipeline, as callTool serves a
// tools/call: the target is "prompt:<name>", the arguments the prompt's.
func (g *Gateway) getPrompt(ctx context.Context, f *front, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
	if !g.enter() {
		return nil, refused(shuttingDownText)
	}
	defer g.inflight.Done()
	st := g.state.Load()
	cl, err := f.identifyRequest(st, req)
	if err != nil {
		return nil, refused(err.Error())
	}
	name := req.Params.Name
	target := upstream.PromptTarget(name)
	raw, err := json.Marshal(req.Params.Arguments)
	if err != nil || string(raw) == "null" {
		raw = json.RawMessage("{}")
	}
	session := f.sessionOf(req.Session, cl)
	id := warden.Identity{Tenant: cl.Tenant, Principal: cl.Principal}
	if text, ok := g.haltedText(f, req.Session, cl); ok {
		g.refuse(ctx, st, target, id, session, raw, warden.StageGate, haltedReason)
		return nil, refused(text)
	}
	if ok, why := visiblePrompt(st, cl, name); !ok {
		if why != "" {
			g.refuse(ctx, st, target, id, session, raw, warden.StageLookup, why)
		}
		return nil, unknownPrompt(name)
	}
	args, err := warden.ParseArgs(raw)
	if err != nil {
		return nil, refused(fmt.Sprintf("Invalid arguments for prompt %s: %v.", name, err))
	}
	slot := newSlot(g, target, req.Session, req.Params.GetProgressToken())
	slot.server, slot.def = st.cat.prompts[name].prompt.Server, st.cat.prompts[name].prompt.Hash
	state, responses, err := g.relaySlot(ctx, f, st, cl, session, slot, target, args, req.Params.RequestState, req.Params.InputResponses, req.ClientCapabilities())
	if err != nil {
		return nil, err
	}
	slot.mrtr = f.mrtrOf(state, responses, req.ClientCapabilities())
	out, text, ok := g.govern(ctx, f, st, cl, req.Session, slot, target, args)
	switch {
	case slot.ask != nil:
		return &mcp.GetPromptResult{InputRequests: slot.ask.requests, RequestState: slot.ask.state}, nil
	case !ok:
		return nil, refused(text)
	case out.Status != warden.StatusRan || out.IsError:
		return nil, refused(out.ModelText)
	}
	res, _ := slot.other.(*mcp.GetPromptResult)
	if res != nil && out.Executed && res.NeedsInput() {
		if slot.relay == nil || out.ModelText != slot.text {
			return nil, refused("The server asked for input the gateway cannot pass on in this request: " + out.ModelText)
		}
		token, refusal := g.relayInput(ctx, f, st, cl, req.Session, slot, target, args, res.InputRequests, res.RequestState)
		if refusal != "" {
			return nil, refused(refusal)
		}
		return &mcp.GetPromptResult{InputRequests: res.InputRequests, RequestState: token}, nil
	}
	if res != nil && out.Executed && out.ModelText == slot.text {
		return res, nil
	}
	// The pipeline changed what the model reads: it reads only that.
	return &mcp.GetPromptResult{Messages: []*mcp.PromptMessage{{Role: "user", Content: &mcp.TextContent{Text: out.ModelText}}}}, nil
}

// readResource serves one resources/read through the pipeline (the handler of every
// resource and template the fronts serve: the SDK finds one for any URI the gateway
// may route, and the gateway routes it itself): the target is
// "resource:<server>" of the server that serves the URI, the argument the URI. A URI
// the caller may not read answers exactly like one that does not exist (the audit
// log records the refusal and why), whether its server is hidden from the role or
// the policy denies this URI.
func (g *Gateway) readResource(ctx context.Context, f *front, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
	if !g.enter() {
		return nil, refused(shuttingDownText)
	}
	defer g.inflight.Done()
	st := g.state.Load()
	cl, err := f.identifyRequest(st, req)
	if err != nil {
		return nil, refused(err.Error())
	}
	uri := req.Params.URI
	raw := uriArgs(uri)
	session := f.sessionOf(req.Session, cl)
	id := warden.Identity{Tenant: cl.Tenant, Principal: cl.Principal}
	up, quarantined, err := routeResource(st, uri, func(server string) bool { return mayRead(st, cl, server) })
	if err != nil {
		return nil, err
	}
	if up == nil {
		if quarantined != "" {
			g.refuse(ctx, st, upstream.ResourceTarget(quarantined), id, session, raw, warden.StageLookup, "resource template definition changed since it was approved")
		}
		return nil, mcp.ResourceNotFoundError(uri)
	}
	target := upstream.ResourceTarget(up.Name())
	if text, ok := g.haltedText(f, req.Session, cl); ok {
		g.refuse(ctx, st, target, id, session, raw, warden.StageGate, haltedReason)
		return nil, refused(text)
	}
	if !mayRead(st, cl, up.Name()) {
		g.refuse(ctx, st, target, id, session, raw, warden.StageLookup, fmt.Sprintf("resources hidden from the caller: not allowed to role %q", cl.Role))
		return nil, mcp.ResourceNotFoundError(uri)
	}
	if _, listed := st.cat.resources[uri]; !listed {
		if why := unnormalURI(uri); why != "" {
			g.refuse(ctx, st, target, id, session, raw, warden.StageValidation, "resource URI not in normal form: "+why)
			return nil, refused(fmt.Sprintf("The resource URI %s is not in normal form: %s. The policy judges a URI as written, so another spelling of a URI is not read. Nothing was read; write it without \".\" or \"..\" segments and with letters, digits and -._~ unencoded.", uri, why))
		}
	}
	args, err := warden.ParseArgs(raw)
	if err != nil {
		return nil, refused(err.Error())
	}
	slot := newSlot(g, target, req.Session, req.Params.GetProgressToken())
	slot.server = up.Name()
	if t := up.Route(uri).Template; t != nil {
		slot.def = t.Hash
	}
	state, responses, err := g.relaySlot(ctx, f, st, cl, session, slot, target, args, req.Params.RequestState, req.Params.InputResponses, req.ClientCapabilities())
	if err != nil {
		return nil, err
	}
	slot.mrtr = f.mrtrOf(state, responses, req.ClientCapabilities())
	out, text, ok := g.govern(ctx, f, st, cl, req.Session, slot, target, args)
	switch {
	case slot.ask != nil:
		return &mcp.ReadResourceResult{Cacheable: askCacheable, InputRequests: slot.ask.requests, RequestState: slot.ask.state}, nil
	case !ok:
		return nil, refused(text)
	case out.Status == warden.StatusRefused && out.Stage == warden.StagePermission && out.Decision.Effect == warden.Deny && !out.Decision.Fault:
		// Denied by policy: nothing confirms the resource exists.
		return nil, mcp.ResourceNotFoundError(uri)
	case out.Status != warden.StatusRan || out.IsError:
		return nil, refused(out.ModelText)
	}
	res, _ := slot.other.(*mcp.ReadResourceResult)
	if res != nil && out.Executed && res.NeedsInput() {
		if slot.relay == nil || out.ModelText != slot.text {
			return nil, refused("The server asked for input the gateway cannot pass on in this request: " + out.ModelText)
		}
		token, refusal := g.relayInput(ctx, f, st, cl, req.Session, slot, target, args, res.InputRequests, res.RequestState)
		if refusal != "" {
			return nil, refused(refusal)
		}
		return &mcp.ReadResourceResult{Cacheable: askCacheable, InputRequests: res.InputRequests, RequestState: token}, nil
	}
	if res != nil && out.Executed && out.ModelText == slot.text {
		res.Cacheable = viewCacheable // never the upstream's: the read was judged for this identity
		return res, nil
	}
	return &mcp.ReadResourceResult{Cacheable: viewCacheable, Contents: []*mcp.ResourceContents{{URI: uri, MIMEType: "text/plain", Text: out.ModelText}}}, nil
}

// unnormalURI says why uri, read through a resource template, is another spelling
// of a URI that policy patterns would judge differently, or "" when it is in normal
// form for the gateway: it has no percent-encoded unreserved character (a letter, a
// digit or -._~, which RFC 3986 section 6.2.2.2 says are equivalent to the character
// itself), no invalid percent-encoding, and no "." or ".." segment before its query
// or fragment, once percent-decoded and with "\" taken as a separator too (where an
// upstream resolving the URI like a file path would climb out of what the pattern
// matched). A reserved character percent-encoded (%2F in a name) is data and stays.
func unnormalURI(uri string) string {
	for i := 0; i < len(uri); i++ {
		if uri[i] != '%' {
			continue
		}
		if i+2 >= len(uri) || !isHex(uri[i+1]) || !isHex(uri[i+2]) {
			return "it has an invalid percent-encoding"
		}
		if b := unhex(uri[i+1])<<4 | unhex(uri[i+2]); isUnreserved(b) {
			return fmt.Sprintf("%s is the percent-encoding of %q, which is written as itself", uri[i:i+3], rune(b))
		}
	}
	hier := uri
	if i := strings.IndexAny(hier, "?#"); i >= 0 {
		hier = hier[:i]
	}
	decoded, err := url.PathUnescape(hier)
	if err != nil {
		return "it has an invalid percent-encoding"
	}
	for _, seg := range strings.FieldsFunc(decoded, func(r rune) bool { return r == '/' || r == '\\' }) {
		if seg == "." || seg == ".." {
			return fmt.Sprintf("it has a %q segment", seg)
		}
	}
	return ""
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case c <= '9':
		return c - '0'
	case c >= 'a':
		return c - 'a' + 10
	}
	return c - 'A' + 10
}

// isUnreserved reports whether b is an unreserved character of RFC 3986.
func isUnreserved(b byte) bool {
	return 'a' <= b && b <= 'z' || 'A' <= b && b <= 'Z' || '0' <= b && b <= '9' || strings.IndexByte("-._~", b) >= 0
}

// installCatalog brings the front's prompts, resources and templates in line with
// cs. installed remembers what is on the fronts (by kind and key) and is updated.
func (g *Gateway) installCatalog(cs catalogState) {
	wantPrompts := map[string]string{}
	for _, name := range cs.promptNames {
		p := cs.prompts[name].prompt
		wantPrompts[name] = p.Hash + fmt.Sprint(p.Quarantined)
	}
	wantResources := map[string]string{}
	for _, uri := range cs.uris {
		r := cs.resources[uri].res.Resource
		wantResources[uri] = fmt.Sprint(r.Name, "\x00", r.Title, "\x00", r.Description, "\x00", r.MIMEType, "\x00", r.Size)
	}
	wantTemplates := map[string]string{}
	for _, gt := range cs.templates {
		wantTemplates[gt.tmpl.URITemplate] = gt.tmpl.Hash + fmt.Sprint(gt.tmpl.Quarantined)
	}
	var gonePrompts, goneResources, goneTemplates []string
	for k := range g.installedPrompts {
		if _, ok := wantPrompts[k]; !ok {
			gonePrompts = append(gonePrompts, k)
		}
	}
	for k := range g.installedResources {
		if _, ok := wantResources[k]; !ok {
			goneResources = append(goneResources, k)
		}
	}
	for k := range g.installedTemplates {
		if _, ok := wantTemplates[k]; !ok {
			goneTemplates = append(goneTemplates, k)
		}
	}
	for _, f := range g.fronts {
		if len(gonePrompts) > 0 {
			f.server.RemovePrompts(gonePrompts...)
		}
		if len(goneResources) > 0 {
			f.server.RemoveResources(goneResources...)
		}
		if len(goneTemplates) > 0 {
			f.server.RemoveResourceTemplates(goneTemplates...)
		}
	}
	for _, k := range gonePrompts {
		delete(g.installedPrompts, k)
	}
	for _, k := range goneResources {
		delete(g.installedResources, k)
	}
	for _, k := range goneTemplates {
		delete(g.installedTemplates, k)
	}
	for _, name := range cs.promptNames {
		if g.installedPrompts[name] == wantPrompts[name] {
			continue
		}
		p := cs.prompts[name].prompt.Prompt
		def := &mcp.Prompt{Name: name, Title: p.Title, Description: p.Description, Arguments: p.Arguments, Icons: p.Icons}
		if g.installSafely("prompt", name, func(f *front) {
			f.server.AddPrompt(def, func(ctx context.Context, req *mcp.GetPromptRequest) (*mcp.GetPromptResult, error) {
				return g.getPrompt(ctx, f, req)
			})
		}) {
			g.installedPrompts[name] = wantPrompts[name]
		}
	}
	for _, uri := range cs.uris {
		if g.installedResources[uri] == wantResources[uri] {
			continue
		}
		r := cs.resources[uri].res.Resource
		def := &mcp.Resource{URI: uri, Name: r.Name, Title: r.Title, Description: r.Description, MIMEType: r.MIMEType, Size: r.Size, Annotations: r.Annotations, Icons: r.Icons}
		if g.installSafely("resource", uri, func(f *front) {
			f.server.AddResource(def, func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
				return g.readResource(ctx, f, req)
			})
		}) {
			g.installedResources[uri] = wantResources[uri]
		}
	}
	for _, gt := range cs.templates {
		key := gt.tmpl.URITemplate
		if g.installedTemplates[key] == wantTemplates[key] {
			continue
		}
		t := gt.tmpl.Template
		def := &mcp.ResourceTemplate{URITemplate: key, Name: t.Name, Title: t.Title, Description: t.Description, MIMEType: t.MIMEType, Annotations: t.Annotations, Icons: t.Icons}
		if g.installSafely("resource template", key, func(f *front) {
			f.server.AddResourceTemplate(def, func(ctx context.Context, req *mcp.ReadResourceRequest) (*mcp.ReadResourceResult, error) {
				return g.readResource(ctx, f, req)
			})
		}) {
			g.installedTemplates[key] = wantTemplates[key]
		}
	}
}

// installSafely runs install on every front, turning a panic of the SDK (on a URI
// or template it cannot take) into a logged refusal of that one definition.
func (g *Gateway) installSafely(kind, name string, install func(*front)) (ok bool) {
	defer func() {
		if r := recover(); r != nil {
			g.log.Error("definition refused: the MCP SDK cannot serve it", slog.String("kind", kind), slog.String("name", name), slog.String("error", fmt.Sprint(r)))
			ok = false
		}
	}()
	for _, f := range g.fronts {
		install(f)
	}
	return true
}

// filterCatalogList keeps, in a prompts/list, resources/list or
// resources/templates/list result, only what cl may see (none in a halted session).
func filterCatalogList(ctx context.Context, st *gatewayState, cl Client, halted bool, res mcp.Result) mcp.Result {
	switch list := res.(type) {
	case *mcp.ListPromptsResult:
		out := *list
		out.Prompts = []*mcp.Prompt{}
		for _, p := range list.Prompts {
			if ok, _ := visiblePrompt(st, cl, p.Name); ok && !halted {
				out.Prompts = append(out.Prompts, p)
			}
		}
		return &out
	case *mcp.ListResourcesResult:
		out := *list
		out.Resources = []*mcp.Resource{}
		for _, r := range list.Resources {
			gr, ok := st.cat.resources[r.URI]
			if ok && !halted && resourceListed(ctx, st, cl, gr.res) {
				out.Resources = append(out.Resources, r)
			}
		}
		return &out
	case *mcp.ListResourceTemplatesResult:
		out := *list
		out.ResourceTemplates = []*mcp.ResourceTemplate{}
		for _, t := range list.ResourceTemplates {
			if halted {
				break
			}
			for _, gt := range st.cat.templates {
				if gt.tmpl.URITemplate == t.URITemplate && !gt.tmpl.Quarantined && mayRead(st, cl, gt.tmpl.Server) {
					out.ResourceTemplates = append(out.ResourceTemplates, t)
					break
				}
			}
		}
		return &out
	}
	return res
}
