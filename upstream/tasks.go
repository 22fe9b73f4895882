// Upstream tasks (the MCP tasks extension of protocol 2026-07-28, SEP-2663): a
// tools/call the upstream answers with a task is followed inside [Server.Call]
// until the task ends, as if the call had answered at once.

//lint:file-ignore SA1019 an upstream task's input requests may still ask for sampling or roots, deprecated from 2026-07-28 on; they are answered like any other such request

package upstream

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wardenhq/warden/internal/mcptasks"
)

const (
	// taskPollDefault is the wait between two tasks/get when the task gives no
	// pollIntervalMs; taskPollMin and taskPollMax bound the one it gives.
	taskPollDefault = 500 * time.Millisecond
	taskPollMin     = 50 * time.Millisecond
	taskPollMax     = 5 * time.Second
	// taskCancelTimeout bounds the tasks/cancel sent when a call ends before its
	// task did.
	taskCancelTimeout = 5 * time.Second
	// taskStatePrefix starts the requestState of a relayed task round (see
	// sealTaskState).
	taskStatePrefix = "warden-task-state."
)

// taskError ends a call whose upstream task ended it without an answer the caller
// can use (cancelled by the upstream, input that cannot be passed on): the upstream
// answered, so the connection is kept (see upstreamAnswered).
type taskError struct {
	msg string
	err error // wrapped, when an answer function failed
}

func (e *taskError) Error() string {
	if e.err != nil {
		return e.msg + ": " + e.err.Error()
	}
	return e.msg
}

func (e *taskError) Unwrap() error { return e.err }

// offersTasks reports whether cs speaks protocol 2026-07-28 or later and its server
// offers the tasks extension in its server/discover result.
func offersTasks(cs *mcp.ClientSession) bool {
	init := cs.InitializeResult()
	if !stateless(cs) || init.Capabilities == nil {
		return false
	}
	_, ok := init.Capabilities.Extensions[mcptasks.Extension]
	return ok
}

// declareTasks is a sending middleware of the Server's MCP clients: a tools/call
// sent with a declaring taskCall in its context (a connection whose server offers
// tasks, see offersTasks) declares the extension in the client capabilities it
// carries in its _meta (those the SDK or relayRound put there, otherwise
// unchanged), so that the upstream may answer with a task. Other requests are not
// touched: a server that does not offer tasks never sees the declaration.
func declareTasks(next mcp.MethodHandler) mcp.MethodHandler {
	return func(ctx context.Context, method string, req mcp.Request) (mcp.Result, error) {
		tc := taskCallOf(ctx)
		if tc == nil || !tc.declare || method != "tools/call" {
			return next(ctx, method, req)
		}
		p, ok := req.GetParams().(*mcp.CallToolParams)
		if !ok || p == nil {
			return next(ctx, method, req)
		}
		if p.Meta == nil {
			p.Meta = map[string]any{}
		}
		caps, err := withTasksDeclared(p.Meta[mcp.MetaKeyClientCapabilities])
		if err != nil {
			return nil, fmt.Errorf("declaring the tasks extension: %w", err)
		}
		p.Meta[mcp.MetaKeyClientCapabilities] = caps
		tc.setCaps(caps)
		return next(ctx, method, req)
	}
}

// withTasksDeclared returns the client capabilities caps (as the SDK encodes them;
// nil for none) with the tasks extension added to their extensions.
func withTasksDeclared(caps any) (json.RawMessage, error) {
	obj := map[string]json.RawMessage{}
	if caps != nil {
		raw, err := marshalGuarded(caps)
		if err != nil {
			return nil, err
		}
		if !bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
			if err := json.Unmarshal(raw, &obj); err != nil {
				return nil, fmt.Errorf("client capabilities are not an object: %w", err)
			}
		}
	}
	ext := map[string]json.RawMessage{}
	if raw, ok := obj["extensions"]; ok && !bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		if err := json.Unmarshal(raw, &ext); err != nil {
			return nil, fmt.Errorf("client capability extensions are not an object: %w", err)
		}
	}
	ext[mcptasks.Extension] = json.RawMessage(`{}`)
	rawExt, err := json.Marshal(ext)
	if err != nil {
		return nil, err
	}
	obj["extensions"] = rawExt
	return json.Marshal(obj)
}

// callTool sends the tools/call of params on c and, when the upstream answers with
// a task, follows it (see [Server.Call]); x is the call's exchange.
func (u *Server) callTool(ctx context.Context, c *upstreamConn, x exchange, params *mcp.CallToolParams) (*mcp.CallToolResult, error) {
	if !c.tasks {
		return c.cs.CallTool(ctx, params)
	}
	tc := newTaskCall(true, "")
	defer forgetting(c, tc)()
	res, err := c.cs.CallTool(withTaskCall(ctx, tc), params)
	if err != nil {
		return nil, err
	}
	resp, _ := tc.response()
	var head struct {
		ResultType string `json:"resultType"`
	}
	if resp == nil || resp.Error != nil || json.Unmarshal(resp.Result, &head) != nil || head.ResultType != "task" {
		if resp == nil && isTaskResult(res) {
			return nil, errors.New("the upstream answered with a task whose answer was not seen")
		}
		return res, nil
	}
	var task mcptasks.Task
	if err := json.Unmarshal(resp.Result, &task); err != nil {
		return nil, fmt.Errorf("the upstream's task is malformed: %w", err)
	}
	if task.TaskID == "" {
		return nil, errors.New("the upstream's task has no taskId")
	}
	t := &taskRun{u: u, c: c, x: x, id: task.TaskID, caps: tc.declared()}
	if x.opts != nil && x.opts.OnTask != nil {
		x.opts.OnTask(ctx)
	}
	return t.follow(ctx, &task)
}

// isTaskResult reports whether the SDK decoded res from a result of type task.
func isTaskResult(res *mcp.CallToolResult) bool {
	if res == nil {
		return false
	}
	raw, err := marshalGuarded(res)
	if err != nil {
		return false
	}
	var head struct {
		ResultType string `json:"resultType"`
	}
	return json.Unmarshal(raw, &head) == nil && head.ResultType == "task"
}

// resumeTask is a relayed retry of a task's input round (Relay.State a task state,
// st): the caller's answers go to the task with tasks/update, and the task is
// followed from there.
func (u *Server) resumeTask(ctx context.Context, c *upstreamConn, x exchange, st taskState) (*mcp.CallToolResult, error) {
	if !c.tasks {
		return nil, &taskError{msg: fmt.Sprintf("task %q cannot be resumed: the server no longer offers tasks", st.TaskID)}
	}
	relay := x.opts.Relay
	caps, err := withTasksDeclared(relayCapabilities(relay.Capabilities))
	if err != nil {
		return nil, err
	}
	t := &taskRun{u: u, c: c, x: x, id: st.TaskID, caps: caps}
	if len(relay.Responses) > 0 {
		responses := make(map[string]json.RawMessage, len(relay.Responses))
		for id, r := range relay.Responses {
			raw, err := marshalGuarded(r)
			if err != nil {
				return nil, fmt.Errorf("encoding the answer to input request %q: %w", id, err)
			}
			responses[id] = raw
		}
		if err := t.update(ctx, responses); err != nil {
			return nil, t.ended(ctx, err)
		}
	}
	task, err := t.get(ctx)
	if err != nil {
		return nil, t.ended(ctx, err)
	}
	return t.follow(ctx, task)
}

// taskRun is one upstream task followed by a call, on the call's connection.
type taskRun struct {
	u    *Server
	c    *upstreamConn
	x    exchange
	id   string
	caps json.RawMessage // the client capabilities its requests declare
}

// follow polls the task from task (its latest state) until it ends, and returns
// what the call returns. A task that lists input requests waits for them: after a
// tasks/update the upstream lists those it still waits for (none answered: it is
// working again, or asks anew).
func (t *taskRun) follow(ctx context.Context, task *mcptasks.Task) (*mcp.CallToolResult, error) {
	for {
		if task.TaskID != t.id {
			return nil, fmt.Errorf("the upstream answered tasks/get for task %q with task %q", t.id, task.TaskID)
		}
		switch task.Status {
		case mcptasks.StatusCompleted:
			if len(task.Result) == 0 {
				return nil, fmt.Errorf("the upstream's completed task %q has no result", t.id)
			}
			var res mcp.CallToolResult
			if err := json.Unmarshal(task.Result, &res); err != nil {
				return nil, fmt.Errorf("the result of the upstream's task %q is malformed: %w", t.id, err)
			}
			if res.NeedsInput() {
				return nil, fmt.Errorf("the result of the upstream's completed task %q asks for input", t.id)
			}
			return &res, nil
		case mcptasks.StatusFailed:
			if task.Error == nil {
				return nil, fmt.Errorf("the upstream's failed task %q has no error", t.id)
			}
			return nil, &jsonrpc.Error{Code: task.Error.Code, Message: task.Error.Message, Data: task.Error.Data}
		case mcptasks.StatusCancelled:
			return nil, &taskError{msg: fmt.Sprintf("the upstream cancelled task %q before it completed", t.id)}
		case mcptasks.StatusInputRequired:
			if pending := task.InputRequests; len(pending) > 0 {
				res, done, err := t.input(ctx, pending)
				if done {
					return res, err
				}
				var gerr error
				if task, gerr = t.get(ctx); gerr != nil {
					return nil, t.ended(ctx, gerr)
				}
				continue
			}
		case mcptasks.StatusWorking:
		default:
			t.cancel(ctx)
			return nil, &taskError{msg: fmt.Sprintf("the upstream's task %q has the unknown status %q; it was cancelled", t.id, task.Status)}
		}
		timer := time.NewTimer(pollInterval(task.PollIntervalMs))
		select {
		case <-ctx.Done():
			timer.Stop()
			t.cancel(ctx)
			return nil, ctx.Err()
		case <-timer.C:
		}
		var err error
		if task, err = t.get(ctx); err != nil {
			return nil, t.ended(ctx, err)
		}
	}
}

// pollInterval is the wait before the next tasks/get of a task that asked for ms.
func pollInterval(ms int64) time.Duration {
	if ms <= 0 {
		return taskPollDefault
	}
	return min(max(time.Duration(ms)*time.Millisecond, taskPollMin), taskPollMax)
}

// ended returns err, a request about the task that failed; when ctx ended first, the
// task is cancelled and ctx's error returned.
func (t *taskRun) ended(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		t.cancel(ctx)
		return ctx.Err()
	}
	return err
}

// input handles the task's input requests pending (see [CallOptions.Relay]). done
// reports that the call ends with res or err; otherwise the answers were sent.
func (t *taskRun) input(ctx context.Context, pending map[string]json.RawMessage) (res *mcp.CallToolResult, done bool, err error) {
	opts := t.x.opts
	if opts != nil && opts.Relay != nil {
		res, err := t.relayRound(pending)
		if err != nil {
			t.cancel(ctx)
			return nil, true, &taskError{msg: fmt.Sprintf("the upstream asked for input during task %q that cannot be passed on, so the task was cancelled", t.id), err: err}
		}
		return res, true, nil
	}
	var asks *ClientRequests
	if opts != nil {
		asks = opts.Client
	}
	answers, err := t.answer(ctx, asks, pending)
	if err != nil {
		t.cancel(ctx)
		if ctx.Err() != nil {
			return nil, true, ctx.Err()
		}
		return nil, true, err
	}
	if err := t.update(ctx, answers); err != nil {
		return nil, true, t.ended(ctx, err)
	}
	return nil, false, nil
}

// relayRound returns the multi-round-trip result that passes the task's input
// requests pending to the caller, with a task state as its requestState.
func (t *taskRun) relayRound(pending map[string]json.RawMessage) (*mcp.CallToolResult, error) {
	state, err := t.u.sealTaskState(taskState{
		Server:   t.u.cfg.Name,
		Tool:     t.x.key,
		TaskID:   t.id,
		Conn:     t.c.seq,
		Progress: progressTokenOf(t.x.params),
	})
	if err != nil {
		return nil, err
	}
	raw, err := json.Marshal(map[string]any{
		"resultType":    "input_required",
		"inputRequests": pending,
		"requestState":  state,
	})
	if err != nil {
		return nil, err
	}
	var res mcp.CallToolResult
	if err := json.Unmarshal(raw, &res); err != nil {
		return nil, err
	}
	if !res.NeedsInput() {
		return nil, errors.New("the round does not read as input_required")
	}
	return &res, nil
}

// progressTokenOf returns the progress token the Server asked with in params ("" for
// none).
func progressTokenOf(params mcp.RequestParams) string {
	if params == nil {
		return ""
	}
	s, _ := params.GetProgressToken().(string)
	return s
}

// answer answers the task's input requests pending through asks, the handlers the
// SDK's own fulfilment of an input_required round calls (onElicit, onCreateMessage,
// which take the call in flight's ClientRequests), one at a time in the order of
// their ids. A request asks cannot answer cancels nothing here: it is an error
// before any is asked.
func (t *taskRun) answer(ctx context.Context, asks *ClientRequests, pending map[string]json.RawMessage) (map[string]json.RawMessage, error) {
	type ask struct {
		id     string
		method string
		params json.RawMessage
	}
	var asked []ask
	var unanswerable []string
	for _, id := range slices.Sorted(maps.Keys(pending)) {
		var r struct {
			Method string          `json:"method"`
			Params json.RawMessage `json:"params"`
		}
		if err := json.Unmarshal(pending[id], &r); err != nil {
			unanswerable = append(unanswerable, fmt.Sprintf("%s (malformed)", id))
			continue
		}
		switch {
		case r.Method == "elicitation/create" && asks != nil && asks.Elicitation != nil:
		case r.Method == "sampling/createMessage" && asks != nil && asks.Sampling != nil:
		case r.Method == "roots/list" && asks != nil && asks.Roots != nil:
		default:
			unanswerable = append(unanswerable, fmt.Sprintf("%s (%s)", id, r.Method))
			continue
		}
		asked = append(asked, ask{id, r.Method, r.Params})
	}
	if len(unanswerable) > 0 {
		return nil, &taskError{msg: fmt.Sprintf("the upstream asked for input during task %q that cannot be passed on (%s): the call's client cannot answer it, so the task was cancelled", t.id, strings.Join(unanswerable, ", "))}
	}
	answers := make(map[string]json.RawMessage, len(asked))
	for _, a := range asked {
		var (
			res any
			err error
		)
		switch a.method {
		case "elicitation/create":
			var p mcp.ElicitParams
			if err = json.Unmarshal(a.params, &p); err == nil {
				res, err = t.u.onElicit(ctx, &mcp.ElicitRequest{Session: t.c.cs, Params: &p})
			}
		case "sampling/createMessage":
			var p mcp.CreateMessageParams
			if err = json.Unmarshal(a.params, &p); err == nil {
				res, err = t.u.onCreateMessage(ctx, &mcp.CreateMessageRequest{Session: t.c.cs, Params: &p})
			}
		case "roots/list":
			res, err = t.u.onListRoots(ctx, t.c.cs)
		}
		if err == nil {
			var raw []byte
			if raw, err = marshalGuarded(res); err == nil {
				answers[a.id] = raw
				continue
			}
		}
		return nil, &taskError{msg: fmt.Sprintf("answering input request %q of the upstream's task %q failed, so the task was cancelled", a.id, t.id), err: err}
	}
	return answers, nil
}

// request sends the task request method with params (the taskId added) and returns
// its result.
func (t *taskRun) request(ctx context.Context, method string, params map[string]any) (json.RawMessage, error) {
	if params == nil {
		params = map[string]any{}
	}
	params["taskId"] = t.id
	meta := map[string]any{
		mcp.MetaKeyProtocolVersion:    t.c.cs.InitializeResult().ProtocolVersion,
		mcp.MetaKeyClientInfo:         &mcp.Implementation{Name: gatewayClientName, Version: gatewayClientVersion},
		mcp.MetaKeyClientCapabilities: t.caps,
	}
	if t.c.logsPerRequest {
		meta[mcp.MetaKeyLogLevel] = mcp.LoggingLevel("debug")
	}
	params["_meta"] = meta
	return t.u.sendOwn(ctx, t.c, method, t.id, params)
}

// get returns the task's state (tasks/get).
func (t *taskRun) get(ctx context.Context) (*mcptasks.Task, error) {
	raw, err := t.request(ctx, mcptasks.MethodGet, nil)
	if err != nil {
		return nil, err
	}
	var task mcptasks.Task
	if err := json.Unmarshal(raw, &task); err != nil {
		return nil, fmt.Errorf("the upstream's tasks/get answer for task %q is malformed: %w", t.id, err)
	}
	return &task, nil
}

// update sends the task answers to its input requests (tasks/update).
func (t *taskRun) update(ctx context.Context, answers map[string]json.RawMessage) error {
	_, err := t.request(ctx, mcptasks.MethodUpdate, map[string]any{"inputResponses": answers})
	return err
}

// cancel asks the upstream to cancel the task (tasks/cancel), bounded by
// taskCancelTimeout and not by ctx (which may have ended: that is why), whose
// values it keeps. A failure is logged: the call ends either way.
func (t *taskRun) cancel(ctx context.Context) {
	cctx, stop := context.WithTimeout(context.WithoutCancel(ctx), taskCancelTimeout)
	defer stop()
	if _, err := t.request(cctx, mcptasks.MethodCancel, nil); err != nil {
		t.u.log.Warn("cancelling an upstream task failed", slog.String("task", t.id), slog.String("error", err.Error()))
	}
}

// taskState is what the requestState of a relayed task round names: the task, the
// server and tool whose call created it, the connection it was created on (a
// command server's task lives in its process) and the progress token its call
// asked with.
type taskState struct {
	Server   string `json:"s"`
	Tool     string `json:"t"`
	TaskID   string `json:"id"`
	Conn     int64  `json:"c"`
	Progress string `json:"p,omitempty"`
}

// sealTaskState encodes st as a requestState: taskStatePrefix, the state in
// base64url JSON, ".", and its HMAC-SHA256 under the Server's taskKey (random per
// Server, so a state of another Server or another process never opens).
func (u *Server) sealTaskState(st taskState) (string, error) {
	raw, err := json.Marshal(st)
	if err != nil {
		return "", err
	}
	body := base64.RawURLEncoding.EncodeToString(raw)
	return taskStatePrefix + body + "." + base64.RawURLEncoding.EncodeToString(u.taskMAC(body)), nil
}

func (u *Server) taskMAC(body string) []byte {
	m := hmac.New(sha256.New, u.taskKey[:])
	m.Write([]byte(taskStatePrefix))
	m.Write([]byte(body))
	return m.Sum(nil)
}

// isTaskState reports whether a relay's requestState is (or claims to be) a task
// state of this package's.
func isTaskState(state string) bool { return strings.HasPrefix(state, taskStatePrefix) }

// openTaskState verifies a task state for a retry of the call of tool remote and
// returns it. A state this Server did not seal, or sealed for another tool, is an
// error: the retry is refused before anything is sent.
func (u *Server) openTaskState(state, remote string) (taskState, error) {
	refuse := func(why string) (taskState, error) {
		return taskState{}, fmt.Errorf("server %q: tool %q: the retry's task state is refused (%s): it names no task this server created for this tool", u.cfg.Name, remote, why)
	}
	body, mac, ok := strings.Cut(strings.TrimPrefix(state, taskStatePrefix), ".")
	if !ok {
		return refuse("malformed")
	}
	sum, err := base64.RawURLEncoding.DecodeString(mac)
	if err != nil || !hmac.Equal(sum, u.taskMAC(body)) {
		return refuse("its signature does not verify")
	}
	raw, err := base64.RawURLEncoding.DecodeString(body)
	if err != nil {
		return refuse("malformed")
	}
	var st taskState
	if err := json.Unmarshal(raw, &st); err != nil || st.TaskID == "" {
		return refuse("malformed")
	}
	if st.Server != u.cfg.Name || st.Tool != remote {
		return refuse(fmt.Sprintf("it is of server %q, tool %q", st.Server, st.Tool))
	}
	return st, nil
}
