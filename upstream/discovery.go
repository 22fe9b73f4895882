// Discovery and verification: listing an upstream's tools on a connection, checking
// their schemas and pins, and re-listing after tools/list_changed or a reload, on
// the Server's own goroutine.

package upstream

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/pin"
	"github.com/wardenhq/warden/schema"
)

// Discover admits the server through the transport policy (before any process
// starts or connection opens), connects, lists every tool (following pagination
// cursors), checks each, pins each, and returns them.
//
// A transport denial returns the *[DeniedError] (its event already emitted) and
// nothing else happens. Without a pin store Discover refuses before admission. Tools
// refused individually (missing, non-object or uncompilable input schema, invalid or
// duplicate name) are returned in problems; the rest are returned in tools, the
// quarantined ones flagged. The result becomes [Server.Tools]. After a successful
// Discover, a tools/list_changed from the upstream re-runs discovery in the
// background.
func (u *Server) Discover(ctx context.Context) (tools []Tool, problems []ToolProblem, err error) {
	if u.isClosed() {
		return nil, nil, fmt.Errorf("server %q: %w", u.cfg.Name, ErrClosed)
	}
	if u.opts.Pins == nil {
		return nil, nil, fmt.Errorf("server %q: no pin store: tool definitions cannot be pinned, so no tool is discovered", u.cfg.Name)
	}
	if err := u.policy.Admit(ctx, u.cfg, u.sink); err != nil {
		return nil, nil, err
	}
	u.mu.Lock()
	if u.closed {
		u.mu.Unlock()
		return nil, nil, fmt.Errorf("server %q: %w", u.cfg.Name, ErrClosed)
	}
	u.admitted = true
	u.mu.Unlock()
	u.startWorker()
	// The caller builds what it serves from the result: no OnToolsChanged.
	tools, problems, _, err = u.discover(ctx)
	if err == nil {
		u.mu.Lock()
		u.discovered = true
		u.mu.Unlock()
	}
	return tools, problems, err
}

// Tools returns the tools of the last successful discovery (a copy; the Tool
// definitions are shared and must not be modified), none while the server is down
// (see [Server.Health]). Quarantined tools are included, flagged.
func (u *Server) Tools() []Tool {
	u.mu.Lock()
	defer u.mu.Unlock()
	if u.downLocked() {
		return nil
	}
	return slices.Clone(u.tools)
}

// Problems returns the tools refused by the last successful discovery (a copy).
func (u *Server) Problems() []ToolProblem {
	u.mu.Lock()
	defer u.mu.Unlock()
	return slices.Clone(u.problems)
}

// Refresh re-reads the pin of every discovered tool, so an approval (or a reset)
// made by an operator in another process takes effect without a rediscovery: a
// quarantined tool whose pin now matches is served again, and a served tool whose
// pin no longer matches is quarantined. When that changes anything, OnToolsChanged
// is called (on the Server's goroutine). A pin that cannot be read quarantines its
// tool and is reported in the joined error.
func (u *Server) Refresh(ctx context.Context) error {
	u.discMu.Lock()
	defer u.discMu.Unlock()
	if u.opts.Pins == nil {
		return fmt.Errorf("server %q: no pin store", u.cfg.Name)
	}
	tools := u.Tools()
	changed := false
	var errs []error
	for i := range tools {
		q, err := pin.Check(ctx, u.opts.Pins, u.sink, tools[i].Name, tools[i].Hash, tools[i].def)
		if err != nil {
			errs = append(errs, err)
		}
		if q != tools[i].Quarantined {
			tools[i].Quarantined = q
			changed = true
		}
	}
	if changed {
		u.mu.Lock()
		u.tools = tools
		u.mu.Unlock()
	}
	catChanged, catErrs := u.refreshCatalogPins(ctx)
	if changed || catChanged {
		u.queue(u.changed)
	}
	return errors.Join(append(errs, catErrs...)...)
}

// queue sends a non-blocking signal on ch (capacity 1): at most one is pending.
func (u *Server) queue(ch chan struct{}) {
	select {
	case ch <- struct{}{}:
	default:
	}
}

// startWorker starts the goroutine that runs rediscoveries and OnToolsChanged.
func (u *Server) startWorker() {
	u.workerOnce.Do(func() {
		u.mu.Lock()
		defer u.mu.Unlock()
		if u.closed {
			return
		}
		ctx, cancel := context.WithCancel(context.Background())
		u.workerCancel = cancel
		u.wg.Add(1)
		go u.work(ctx)
	})
}

func (u *Server) work(ctx context.Context) {
	defer u.wg.Done()
	for {
		select {
		case <-ctx.Done():
			return
		case <-u.rediscover:
			u.rediscoveries.Add(1)
			dctx, cancel := context.WithTimeout(ctx, rediscoverTimeout)
			_, problems, _, err := u.discover(dctx)
			cancel()
			if err != nil {
				if ctx.Err() == nil {
					u.log.Warn("rediscovery after tools/list_changed failed; the previous tools stay", slog.String("error", err.Error()))
				}
				continue
			}
			for _, p := range problems {
				u.log.Warn("tool refused", slog.String("tool", p.Tool), slog.String("problem", p.Problem))
			}
			u.toolsChanged(ctx)
		case <-u.recover:
			u.recoverNow(ctx)
		case <-u.changed:
			u.toolsChanged(ctx)
		case <-u.renew:
			u.renewSubscriptions(ctx)
		}
	}
}

// recoverNow starts a connection to a server whose last one ended (unless another is
// live by now) and verifies it, making its tools the served set; OnToolsChanged
// follows when that changed the set or the server came back up. A failed start has
// queued the next attempt (see take).
func (u *Server) recoverNow(ctx context.Context) {
	u.mu.Lock()
	skip := len(u.live) > 0 || u.closed
	wasDown := u.downLocked()
	u.mu.Unlock()
	if skip {
		return
	}
	dctx, cancel := context.WithTimeout(ctx, rediscoverTimeout)
	_, problems, changed, err := u.discover(dctx)
	cancel()
	if err != nil {
		if ctx.Err() == nil {
			u.log.Warn("restarting the server after its connection ended failed", slog.String("error", err.Error()))
		}
		return
	}
	for _, p := range problems {
		u.log.Warn("tool refused", slog.String("tool", p.Tool), slog.String("problem", p.Problem))
	}
	u.log.Info("upstream server restarted after its connection ended")
	if changed || wasDown {
		u.toolsChanged(ctx)
	}
}

// toolsChanged calls OnToolsChanged, containing a panic.
func (u *Server) toolsChanged(ctx context.Context) {
	f := u.opts.OnToolsChanged
	if f == nil || ctx.Err() != nil {
		return
	}
	defer func() {
		if r := recover(); r != nil {
			u.log.Error("OnToolsChanged panicked", slog.String("panic", fmt.Sprint(r)))
		}
	}()
	f(u.cfg.Name)
}

// discover verifies one connection (preferring one a tools/list_changed or
// Reverify unverified) and makes its tools the served set.
// It reports whether that changed what is served; the caller says so (OnToolsChanged)
// when it should.
func (u *Server) discover(ctx context.Context) ([]Tool, []ToolProblem, bool, error) {
	c, err := u.acquireUnverifiedFirst(ctx)
	if err != nil {
		return nil, nil, false, err
	}
	tools, problems, changed, err := u.verify(ctx, c)
	if err != nil {
		return nil, nil, false, err // verify released c
	}
	u.release(c, true)
	return tools, problems, changed, nil
}

// verify lists every tool on c (which the caller holds), checks and pins each, makes
// the result the served set and records on c the definitions it listed, so that calls
// may go out on c. It reports whether the served set changed (names, definitions or
// quarantine). On error c has been released (closed when the connection failed) and
// nothing changed.
func (u *Server) verify(ctx context.Context, c *upstreamConn) ([]Tool, []ToolProblem, bool, error) {
	u.discMu.Lock()
	defer u.discMu.Unlock()
	u.mu.Lock()
	gen := c.gen
	u.mu.Unlock()
	var read int64
	if c.changedRead != nil {
		read = c.changedRead.Load()
	}
	listed, support, err := u.listOn(ctx, c)
	if err != nil {
		return nil, nil, false, err
	}
	cat, err := u.listCatalog(ctx, c)
	if err != nil {
		return nil, nil, false, err
	}
	tools, problems := u.checkTools(ctx, listed, support)
	defs := make(map[string]string, len(tools)+len(cat.prompts)+len(cat.templates))
	for _, t := range tools {
		defs[t.Remote] = t.Hash
	}
	cat.addDefs(defs)
	u.mu.Lock()
	if u.closed {
		u.mu.Unlock()
		u.release(c, false)
		return nil, nil, false, fmt.Errorf("server %q: %w", u.cfg.Name, ErrClosed)
	}
	changed := !sameTools(u.tools, tools) || !u.sameCatalogLocked(cat)
	if !slices.EqualFunc(u.catalogProblems, cat.problems, func(a, b CatalogProblem) bool { return a == b }) {
		for _, p := range cat.problems {
			u.log.Warn("upstream definition refused", slog.String("kind", p.Kind), slog.String("name", p.Name), slog.String("problem", p.Problem))
		}
	}
	u.tools, u.problems = tools, problems
	u.prompts, u.resources, u.templates, u.catalogProblems = cat.prompts, cat.resources, cat.templates, cat.problems
	c.defs, c.verifiedGen, c.verifiedRead = defs, gen, read
	if init := c.cs.InitializeResult(); init != nil && init.Capabilities != nil {
		u.caps = init.Capabilities
	}
	u.mu.Unlock()
	u.verifications.Add(1)
	u.resubscribe(ctx, c)
	return slices.Clone(tools), slices.Clone(problems), changed, nil
}

// sameTools reports whether a and b serve the same tools with the same definitions
// and quarantine flags.
func sameTools(a, b []Tool) bool {
	return slices.EqualFunc(a, b, func(x, y Tool) bool {
		return x.Name == y.Name && x.Hash == y.Hash && x.Quarantined == y.Quarantined
	})
}

// verifiedLocked reports whether c's definitions were listed since its last
// tools/list_changed (or Reverify). u.mu is held. For a command server a
// tools/list_changed counts from the moment it is read off the connection, ahead of
// any answer read after it; for a url server (whose stream cannot be wrapped), from
// the moment the SDK hands it to the client's handler.
func (u *Server) verifiedLocked(c *upstreamConn) bool {
	if c.defs == nil || c.gen != c.verifiedGen {
		return false
	}
	return c.changedRead == nil || c.changedRead.Load() == c.verifiedRead
}

// unverify marks the connection of session cs as needing a new listing before any
// call goes out on it (after its tools/list_changed).
func (u *Server) unverify(cs *mcp.ClientSession) {
	u.mu.Lock()
	if c := u.sessions[cs]; c != nil {
		c.gen++
	}
	u.mu.Unlock()
}

// Reverify re-checks the server's tool definitions now: every connection is marked
// unverified (none serves a call again before it has listed its tools and had every
// pin checked), and one is verified at once, making its tools the served set. The
// gateway calls it on a configuration reload (SIGHUP) for a server it keeps. An
// error (the server cannot be reached) leaves the connections unverified.
func (u *Server) Reverify(ctx context.Context) error {
	u.mu.Lock()
	admitted := u.admitted
	for c := range u.live {
		c.gen++
	}
	u.mu.Unlock()
	if !admitted {
		return fmt.Errorf("server %q: not discovered", u.cfg.Name)
	}
	_, _, changed, err := u.discover(ctx)
	if changed {
		u.queue(u.changed)
	}
	return err
}

// listOn lists every tool over c (which the caller holds), following cursors. On
// error c is released: kept when the upstream answered, closed otherwise.
//
// On a connection whose server offers tasks (see offersTasks) it also returns the
// execution.taskSupport of each tool listed with one, by name, read from the
// undecoded answers (the SDK's Tool drops it; see tasks_tap.go); nil otherwise.
func (u *Server) listOn(ctx context.Context, c *upstreamConn) ([]*mcp.Tool, map[string]string, error) {
	var (
		tools   []*mcp.Tool
		support map[string]string
		cursor  string
		seen    = map[string]bool{}
	)
	for page := 0; ; page++ {
		if page == maxListPages {
			u.release(c, true)
			return nil, nil, fmt.Errorf("server %q: tools/list did not end after %d pages", u.cfg.Name, maxListPages)
		}
		params := &mcp.ListToolsParams{Cursor: cursor}
		lctx := ctx
		var tc *taskCall
		if c.tasks {
			tc = newTaskCall(false, "")
			lctx = withTaskCall(ctx, tc)
		}
		res, err := sdkGuard(func() (*mcp.ListToolsResult, error) { return c.cs.ListTools(lctx, params) })
		if tc != nil {
			forgetting(c, tc)()
		}
		if err == nil && res == nil {
			err = errors.New("empty tools/list result")
		}
		if err == nil && tc != nil {
			if support, err = addTaskSupport(support, tc); err != nil {
				u.release(c, false)
				return nil, nil, fmt.Errorf("server %q: listing tools: %w", u.cfg.Name, err)
			}
		}
		if err != nil {
			switch {
			case upstreamAnswered(err):
				u.release(c, true)
			case ctx.Err() != nil || u.isClosed():
				u.release(c, false)
			default:
				u.failed(c, err.Error())
				u.release(c, false)
			}
			return nil, nil, fmt.Errorf("server %q: listing tools: %w", u.cfg.Name, err)
		}
		tools = append(tools, res.Tools...)
		if res.NextCursor == "" {
			break
		}
		if seen[res.NextCursor] {
			u.release(c, true)
			return nil, nil, fmt.Errorf("server %q: tools/list repeated the cursor %q", u.cfg.Name, res.NextCursor)
		}
		seen[res.NextCursor] = true
		cursor = res.NextCursor
	}
	u.noteSuccess()
	return tools, support, nil
}

// addTaskSupport adds to support the execution.taskSupport of the tools in the
// tools/list answer tc saw. An answer not seen, or not readable, is an error: a
// tool's definition hash must not change because its taskSupport was missed.
func addTaskSupport(support map[string]string, tc *taskCall) (map[string]string, error) {
	resp, _ := tc.response()
	if resp == nil || resp.Error != nil {
		return nil, errors.New("the undecoded tools/list answer was not seen")
	}
	var page struct {
		Tools []struct {
			Name      string `json:"name"`
			Execution *struct {
				TaskSupport string `json:"taskSupport"`
			} `json:"execution"`
		} `json:"tools"`
	}
	if err := json.Unmarshal(resp.Result, &page); err != nil {
		return nil, fmt.Errorf("reading the tools' execution: %w", err)
	}
	for _, t := range page.Tools {
		if t.Execution != nil && t.Execution.TaskSupport != "" {
			if support == nil {
				support = map[string]string{}
			}
			support[t.Name] = t.Execution.TaskSupport
		}
	}
	return support, nil
}

// checkTools refuses the tools that cannot be served and pins the others;
// support holds the tools' execution.taskSupport (see listOn).
func (u *Server) checkTools(ctx context.Context, listed []*mcp.Tool, support map[string]string) ([]Tool, []ToolProblem) {
	prefix := u.cfg.ToolPrefix()
	count := make(map[string]int, len(listed))
	for _, t := range listed {
		if t != nil {
			count[t.Name]++
		}
	}
	reported := map[string]bool{}
	var (
		tools    []Tool
		problems []ToolProblem
	)
	for _, t := range listed {
		if t == nil {
			continue
		}
		name := prefix + t.Name
		refuse := func(problem string) {
			problems = append(problems, ToolProblem{Server: u.cfg.Name, Tool: name, Problem: problem})
		}
		if n := count[t.Name]; n > 1 {
			// Which definition would be the real one? Neither is served.
			if !reported[t.Name] {
				reported[t.Name] = true
				refuse(fmt.Sprintf("duplicate tool name: %q is listed %d times", t.Name, n))
			}
			continue
		}
		if t.Name == "" || !ValidToolName(name) {
			refuse(fmt.Sprintf("tool name %q is not a valid tool name (the governed name %q must be 1 to 128 letters, digits, '_', '.' or '-')", t.Name, name))
			continue
		}
		raw, problem := checkInputSchema(name, t.InputSchema)
		if problem != "" {
			refuse(problem)
			continue
		}
		hash, def, err := pin.HashWithTaskSupport(t, support[t.Name])
		if err != nil {
			refuse("definition cannot be hashed: " + err.Error())
			continue
		}
		q, err := pin.Check(ctx, u.opts.Pins, u.sink, name, hash, def)
		if err != nil {
			u.log.Error("tool definition pin could not be checked; the tool is quarantined", slog.String("tool", name), slog.String("error", err.Error()))
			refuse("definition pin could not be checked, so the tool is quarantined: " + err.Error())
		}
		tools = append(tools, Tool{
			Name:        name,
			Remote:      t.Name,
			Server:      u.cfg.Name,
			Tool:        t,
			InputSchema: raw,
			Hash:        hash,
			Quarantined: q,
			TaskSupport: support[t.Name],
			def:         def,
		})
	}
	return tools, problems
}

// checkInputSchema returns the input schema as JSON, or why it cannot be used.
func checkInputSchema(tool string, v any) (json.RawMessage, string) {
	if v == nil {
		return nil, "input schema is missing"
	}
	raw, err := marshalGuarded(v)
	if err != nil {
		return nil, "input schema cannot be encoded: " + err.Error()
	}
	if bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return nil, "input schema is missing"
	}
	var obj map[string]json.RawMessage
	if json.Unmarshal(raw, &obj) != nil {
		return nil, "input schema is not an object schema"
	}
	var typ string
	if t, ok := obj["type"]; !ok || json.Unmarshal(t, &typ) != nil || typ != "object" {
		return nil, "input schema is not an object schema"
	}
	if _, err := sdkGuard(func() (warden.ArgsValidator, error) { return schema.Compiler{}.CompileSchema(tool, raw) }); err != nil {
		return nil, "input schema does not compile: " + err.Error()
	}
	return json.RawMessage(raw), ""
}
