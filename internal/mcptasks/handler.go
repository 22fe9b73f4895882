package mcptasks

import (
	"bufio"
	"bytes"
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"
)

// Defaults of [Options].
const (
	DefaultTTL           = time.Hour
	DefaultPollInterval  = time.Second
	DefaultMaxTasks      = 10000
	DefaultMaxPerOwner   = 1000
	DefaultMaxBytes      = 512 << 20
	DefaultMaxOwnerBytes = 64 << 20
	DefaultMaxBodyBytes  = 4 << 20
)

// Options configure a [Handler]. Every zero value is a default.
type Options struct {
	// Owner names who a request acts for. A task belongs to the owner of the request
	// that made it, and only requests of the same owner see it: any other gets the
	// answer for a task that does not exist. A request whose owner is "" makes no
	// task and sees none. Nil: every request has the owner "".
	Owner func(*http.Request) string
	// TTL is how long a task is kept after it was created (its ttlMs); a task still
	// running then is cancelled. Default DefaultTTL.
	TTL time.Duration
	// PollInterval is the interval clients are told to poll at (pollIntervalMs).
	// Default DefaultPollInterval.
	PollInterval time.Duration
	// MaxTasks bounds the tasks kept at once, MaxPerOwner those of one owner; a call
	// that would exceed either runs to its end in its own request instead of
	// becoming a task. Defaults DefaultMaxTasks, DefaultMaxPerOwner.
	MaxTasks, MaxPerOwner int
	// MaxBytes bounds the bytes the tasks kept at once hold of their requests and
	// results, MaxOwnerBytes those of one owner's: a call whose request would
	// exceed either runs to its end in its own request instead of becoming a task,
	// and a task's result counts once it is in. Defaults DefaultMaxBytes,
	// DefaultMaxOwnerBytes.
	MaxBytes, MaxOwnerBytes int64
	// MaxBodyBytes bounds the request bodies the Handler reads itself; a larger one
	// goes to next unread. Default DefaultMaxBodyBytes.
	MaxBodyBytes int64
	// Required reports the tools that only run as tasks: a tools/call of one from a
	// request that does not declare the extension is refused with -32021. Nil: none.
	Required func(tool string) bool
	// Logger receives the Handler's own log lines (nil: discarded).
	Logger *slog.Logger
	// Now is the clock (nil: time.Now).
	Now func() time.Time
}

// Handler serves the tasks extension in front of an SDK stateless streamable HTTP
// handler (next), for requests of protocol 2026-07-28:
//
//   - tasks/get, tasks/update and tasks/cancel are answered here, after the checks
//     the extension requires: Mcp-Method and Mcp-Name (the task id) must match the
//     body (HTTP 400, -32020), the request must declare the extension (-32021), and
//     the task must be one of the request's owner (-32602 otherwise, the answer for
//     an unknown task).
//   - A tools/call from a request that declares the extension is served by next as
//     usual, and answers as usual unless its tool handler calls [Promote]: then the
//     task is stored, the client gets a CreateTaskResult, and the call goes on in the
//     background, detached from the client's request. Its answer becomes the task's
//     state: a result completes it, a JSON-RPC error fails it, and a multi-round-trip
//     result (input_required) puts it in input_required with that result's input
//     requests; once tasks/update has answered every one, the tool is called again
//     (through next, with the request's headers and context) with the answers and
//     the round's requestState, as a client's retry would be.
//   - Anything else goes to next untouched.
//
// next must be made with the SDK's StreamableHTTPOptions.PropagateRequestCancellation
// set: the Handler ends a task's call (tasks/cancel, expiry, Close) by ending its
// request's context, which the SDK otherwise does not pass on to the tool handler.
//
// Tasks live in the Handler's memory: they are not shared between processes and do
// not survive a restart.
type Handler struct {
	next http.Handler
	opts Options

	mu     sync.Mutex
	tasks  map[string]*task
	closed bool
	wg     sync.WaitGroup
}

// NewHandler returns a Handler serving the extension in front of next. opts may be
// nil.
func NewHandler(next http.Handler, opts *Options) *Handler {
	h := &Handler{next: next, tasks: map[string]*task{}}
	if opts != nil {
		h.opts = *opts
	}
	o := &h.opts
	if o.Owner == nil {
		o.Owner = func(*http.Request) string { return "" }
	}
	if o.TTL <= 0 {
		o.TTL = DefaultTTL
	}
	if o.PollInterval <= 0 {
		o.PollInterval = DefaultPollInterval
	}
	if o.MaxTasks <= 0 {
		o.MaxTasks = DefaultMaxTasks
	}
	if o.MaxPerOwner <= 0 {
		o.MaxPerOwner = DefaultMaxPerOwner
	}
	if o.MaxBytes <= 0 {
		o.MaxBytes = DefaultMaxBytes
	}
	if o.MaxOwnerBytes <= 0 {
		o.MaxOwnerBytes = DefaultMaxOwnerBytes
	}
	if o.MaxBodyBytes <= 0 {
		o.MaxBodyBytes = DefaultMaxBodyBytes
	}
	if o.Required == nil {
		o.Required = func(string) bool { return false }
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	if o.Now == nil {
		o.Now = time.Now
	}
	return h
}

// Close cancels every task still running and waits, until ctx ends, for their calls
// to return. Calls that arrive later make no tasks.
func (h *Handler) Close(ctx context.Context) error {
	h.mu.Lock()
	h.closed = true
	for _, t := range h.tasks {
		if !t.status.Terminal() {
			t.end(StatusCancelled, "the server is shutting down", h.opts.Now())
		}
	}
	h.mu.Unlock()
	done := make(chan struct{})
	go func() { h.wg.Wait(); close(done) }()
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// task is one task; its fields are guarded by the Handler's mu.
type task struct {
	id, owner        string
	created, updated time.Time
	expires          time.Time
	status           Status
	message          string
	// size is what the task holds of its request and result, in bytes.
	size   int64
	result json.RawMessage
	err    *WireError
	// pending are the input requests of an input_required round still unanswered;
	// answers those answered; state the round's requestState; resume is closed
	// once every request is answered.
	pending map[string]json.RawMessage
	answers map[string]json.RawMessage
	state   json.RawMessage
	resume  chan struct{}
	// cancel ends the call's context.
	cancel context.CancelFunc
}

// end puts t in a terminal state and ends its call's context.
func (t *task) end(s Status, message string, now time.Time) {
	t.status, t.message, t.updated = s, message, now
	t.pending = nil
	t.cancel()
}

func (t *task) wire(resultType string, pollMs int64) Task {
	w := Task{
		ResultType: resultType, TaskID: t.id, Status: t.status, StatusMessage: t.message,
		CreatedAt: Timestamp(t.created), LastUpdatedAt: Timestamp(t.updated),
		TTLMs: t.expires.Sub(t.created).Milliseconds(), PollIntervalMs: pollMs,
	}
	if resultType == "task" {
		return w
	}
	switch t.status {
	case StatusCompleted:
		w.Result = t.result
	case StatusFailed:
		w.Error = t.err
	case StatusInputRequired:
		w.InputRequests = t.pending
	}
	return w
}

// envelope is a JSON-RPC request as far as the Handler reads it.
type envelope struct {
	ID     json.RawMessage `json:"id"`
	Method string          `json:"method"`
	Params json.RawMessage `json:"params"`
}

type requestParams struct {
	Name           string                     `json:"name"`
	TaskID         *string                    `json:"taskId"`
	InputResponses map[string]json.RawMessage `json:"inputResponses"`
	Meta           map[string]json.RawMessage `json:"_meta"`
}

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodPost || r.Body == nil {
		h.next.ServeHTTP(w, r)
		return
	}
	body, err := io.ReadAll(io.LimitReader(r.Body, h.opts.MaxBodyBytes+1))
	if err != nil || int64(len(body)) > h.opts.MaxBodyBytes {
		// next reads (and refuses) what is left as it would have.
		r.Body = struct {
			io.Reader
			io.Closer
		}{io.MultiReader(bytes.NewReader(body), r.Body), r.Body}
		h.next.ServeHTTP(w, r)
		return
	}
	r.Body = io.NopCloser(bytes.NewReader(body))
	var env envelope
	var p requestParams
	if json.Unmarshal(body, &env) != nil || len(env.ID) == 0 || (len(env.Params) > 0 && json.Unmarshal(env.Params, &p) != nil) {
		h.next.ServeHTTP(w, r) // not one request the Handler reads: next answers it
		return
	}
	switch env.Method {
	case MethodGet, MethodUpdate, MethodCancel:
		h.serveTaskMethod(w, r, env, p)
	case "tools/call":
		declared := Declares(p.Meta)
		owner := h.opts.Owner(r)
		switch {
		case !declared && r.Header.Get("Mcp-Method") == "tools/call" && h.opts.Required(r.Header.Get("Mcp-Name")):
			// The tool is the one Mcp-Name names: the SDK runs a tools/call only when
			// the header is exactly its body's name, as its decoder reads it (keys
			// case-sensitively, unlike encoding/json: a body with "name" and "Name"
			// names two tools here).
			writeError(w, http.StatusOK, env.ID, CodeMissingRequiredClientCapability,
				fmt.Sprintf("tool %q runs only as a task: declare the %s extension in the request's client capabilities", p.Name, Extension),
				RequiredCapabilities())
		case declared && owner != "":
			h.serveCall(w, r, env, body, owner)
		default:
			h.next.ServeHTTP(w, r)
		}
	default:
		h.next.ServeHTTP(w, r)
	}
}

func (h *Handler) serveTaskMethod(w http.ResponseWriter, r *http.Request, env envelope, p requestParams) {
	id := ""
	if p.TaskID != nil {
		id = *p.TaskID
	}
	switch got := r.Header.Get("Mcp-Method"); {
	case got == "":
		writeError(w, http.StatusBadRequest, env.ID, CodeHeaderMismatch, "missing required Mcp-Method header", nil)
		return
	case got != env.Method:
		writeError(w, http.StatusBadRequest, env.ID, CodeHeaderMismatch, fmt.Sprintf("header mismatch: Mcp-Method header value %q does not match body value %q", got, env.Method), nil)
		return
	}
	switch got := r.Header.Get("Mcp-Name"); {
	case got == "":
		writeError(w, http.StatusBadRequest, env.ID, CodeHeaderMismatch, fmt.Sprintf("missing required Mcp-Name header for method %q (the task id)", env.Method), nil)
		return
	case got != id:
		writeError(w, http.StatusBadRequest, env.ID, CodeHeaderMismatch, fmt.Sprintf("header mismatch: Mcp-Name header value %q does not match body value %q", got, id), nil)
		return
	}
	if !Declares(p.Meta) {
		writeError(w, http.StatusOK, env.ID, CodeMissingRequiredClientCapability,
			fmt.Sprintf("%s needs the %s extension: declare it in the request's client capabilities", env.Method, Extension), RequiredCapabilities())
		return
	}
	if p.TaskID == nil || id == "" {
		writeError(w, http.StatusOK, env.ID, codeInvalidParams, env.Method+": params.taskId is required", nil)
		return
	}
	owner := h.opts.Owner(r)
	now := h.opts.Now()
	h.mu.Lock()
	t, ok := h.tasks[id]
	if ok && !now.Before(t.expires) {
		h.dropLocked(t, now)
		ok = false
	}
	if !ok || owner == "" || t.owner != owner {
		h.mu.Unlock()
		writeError(w, http.StatusOK, env.ID, codeInvalidParams, fmt.Sprintf("unknown task %q", id), nil)
		return
	}
	switch env.Method {
	case MethodGet:
		answer := t.wire("complete", h.opts.PollInterval.Milliseconds())
		h.mu.Unlock()
		writeResult(w, env.ID, answer)
	case MethodCancel:
		if !t.status.Terminal() {
			t.end(StatusCancelled, "cancelled by the client", now)
		}
		h.mu.Unlock()
		writeResult(w, env.ID, ack)
	case MethodUpdate:
		if t.status != StatusInputRequired {
			status := t.status
			h.mu.Unlock()
			writeError(w, http.StatusOK, env.ID, codeInvalidParams, fmt.Sprintf("task %q is not waiting for input (its status is %s)", id, status), nil)
			return
		}
		if p.InputResponses == nil {
			h.mu.Unlock()
			writeError(w, http.StatusOK, env.ID, codeInvalidParams, "tasks/update: params.inputResponses must be an object of answers keyed by the task's input request ids", nil)
			return
		}
		for key, v := range p.InputResponses {
			if _, ok := t.pending[key]; !ok {
				continue // answers nothing the task asks (any more): dropped, never passed on
			}
			t.answers[key] = v
			delete(t.pending, key)
		}
		t.updated = now
		if len(t.pending) == 0 {
			t.status, t.pending = StatusWorking, nil
			close(t.resume)
		}
		h.mu.Unlock()
		writeResult(w, env.ID, ack)
	}
}

// ack is the answer of tasks/update and tasks/cancel.
var ack = json.RawMessage(`{"resultType":"complete"}`)

const (
	codeInvalidParams = -32602
	codeInternalError = -32603
)

// dropLocked forgets t (expired), cancelling its call if it still runs.
func (h *Handler) dropLocked(t *task, now time.Time) {
	if !t.status.Terminal() {
		t.end(StatusCancelled, "the task expired", now)
	}
	delete(h.tasks, t.id)
}

// promoter is what [Promote] finds in a call's context.
type promoter struct {
	h     *Handler
	owner string
	tw    *teeWriter
	// mu guards the fields below. promoted is closed by the first Promote;
	// abandoned is set once the client's request ended without a task.
	mu        sync.Mutex
	t         *task
	promoted  chan struct{}
	abandoned bool
	cancel    context.CancelFunc
	size      int64 // the request's body
}

type promoterKey struct{}

// Promote turns the tools/call whose handler runs with ctx into a task, with
// statusMessage as its status message ("" for none), and reports whether it now is
// one. It is false when ctx is not a call the [Handler] may make a task of (the
// request did not declare the extension, its owner is "", the client's request has
// ended, the Handler is closing, or its tasks are at a bound of [Options]); the call
// then answers in its own request.
// Once a call is a task, Promote only sets the message and reports true. The task
// exists (tasks/get finds it) when Promote returns true.
func Promote(ctx context.Context, statusMessage string) bool {
	p, _ := ctx.Value(promoterKey{}).(*promoter)
	if p == nil {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.t != nil {
		p.h.setMessage(p.t, statusMessage)
		return true
	}
	if p.abandoned {
		return false
	}
	t, ok := p.h.create(p.owner, statusMessage, p.size, p.cancel)
	if !ok {
		return false
	}
	p.t = t
	p.tw.divert()
	close(p.promoted)
	return true
}

// IsTask reports whether the call whose handler runs with ctx is a task (see
// [Promote]).
func IsTask(ctx context.Context) bool {
	p, _ := ctx.Value(promoterKey{}).(*promoter)
	if p == nil {
		return false
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.t != nil
}

// SetStatusMessage sets the status message of the task ctx's call is, if it is one.
func SetStatusMessage(ctx context.Context, msg string) {
	p, _ := ctx.Value(promoterKey{}).(*promoter)
	if p == nil {
		return
	}
	p.mu.Lock()
	t := p.t
	p.mu.Unlock()
	if t != nil {
		p.h.setMessage(t, msg)
	}
}

func (h *Handler) setMessage(t *task, msg string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !t.status.Terminal() && t.message != msg {
		t.message, t.updated = msg, h.opts.Now()
	}
}

// create stores a new working task of owner, unless the Handler is closing or full.
func (h *Handler) create(owner, message string, size int64, cancel context.CancelFunc) (*task, bool) {
	now := h.opts.Now()
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return nil, false
	}
	mine := 0
	var bytes, mineBytes int64
	for _, t := range h.tasks {
		if !now.Before(t.expires) {
			h.dropLocked(t, now)
			continue
		}
		bytes += t.size
		if t.owner == owner {
			mine++
			mineBytes += t.size
		}
	}
	if len(h.tasks) >= h.opts.MaxTasks || mine >= h.opts.MaxPerOwner || bytes+size > h.opts.MaxBytes || mineBytes+size > h.opts.MaxOwnerBytes {
		h.opts.Logger.Warn("a call was not made a task: the tasks kept are at their bound", "tasks", len(h.tasks), "bytes", bytes, "of_owner", mine, "owner_bytes", mineBytes, "request_bytes", size)
		return nil, false
	}
	var b [16]byte
	rand.Read(b[:])
	t := &task{
		id: "task_" + hex.EncodeToString(b[:]), owner: owner,
		created: now, updated: now, expires: now.Add(h.opts.TTL),
		status: StatusWorking, message: message, cancel: cancel, size: size,
	}
	h.tasks[t.id] = t
	h.wg.Add(1) // done by follow
	return t, true
}

// serveCall serves a tools/call that may become a task.
func (h *Handler) serveCall(w http.ResponseWriter, r *http.Request, env envelope, body []byte, owner string) {
	ctx, cancel := context.WithCancel(context.WithoutCancel(r.Context()))
	tw := &teeWriter{w: w, header: w.Header()}
	p := &promoter{h: h, owner: owner, tw: tw, promoted: make(chan struct{}), cancel: cancel, size: int64(len(body))}
	ctx = context.WithValue(ctx, promoterKey{}, p)
	inner := r.Clone(ctx)
	inner.Body = io.NopCloser(bytes.NewReader(body))
	done := make(chan struct{})
	go func() {
		defer close(done)
		h.next.ServeHTTP(tw, inner)
	}()
	select {
	case <-done:
	case <-p.promoted:
	case <-r.Context().Done():
	}
	p.mu.Lock()
	t := p.t
	if t == nil {
		p.abandoned = true
	}
	p.mu.Unlock()
	if t == nil {
		// No task: the call answered (or is answering) in this request. A client
		// that went away cancels it.
		select {
		case <-done:
		case <-r.Context().Done():
			cancel()
			<-done
		}
		cancel()
		return
	}
	h.mu.Lock()
	created := t.wire("task", h.opts.PollInterval.Milliseconds())
	h.mu.Unlock()
	tw.answer(env.ID, created)
	go h.follow(ctx, t, r.Clone(ctx), env, done, tw)
}

// follow waits for a task's call to answer and records each round.
func (h *Handler) follow(ctx context.Context, t *task, r *http.Request, env envelope, done <-chan struct{}, tw *teeWriter) {
	defer h.wg.Done()
	defer t.cancel()
	expiry := time.NewTimer(t.expires.Sub(h.opts.Now()))
	defer expiry.Stop()
	for {
		select {
		case <-done:
		case <-expiry.C:
			h.expire(t)
			<-done
			return
		}
		answer := tw.response(env.ID)
		resume, ok := h.settle(t, answer)
		if !ok {
			return
		}
		select {
		case <-resume:
		case <-ctx.Done():
			return // cancelled: the state says why
		case <-expiry.C:
			h.expire(t)
			return
		}
		// Every input request is answered: the tool is called again with the answers
		// and the round's requestState.
		h.mu.Lock()
		body, err := retryBody(env, t.answers, t.state)
		t.answers, t.state = nil, nil
		h.mu.Unlock()
		if err != nil {
			h.fail(t, codeInternalError, "the task's next round could not be built: "+err.Error())
			return
		}
		round := r.Clone(ctx)
		round.Body = io.NopCloser(bytes.NewReader(body))
		round.ContentLength = int64(len(body))
		round.Header.Set("Content-Length", strconv.Itoa(len(body)))
		tw = &teeWriter{header: http.Header{}, diverted: true}
		next := make(chan struct{})
		go func() {
			defer close(next)
			h.next.ServeHTTP(tw, round)
		}()
		done = next
	}
}

func (h *Handler) expire(t *task) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !t.status.Terminal() {
		t.end(StatusCancelled, "the task expired before its call ended", h.opts.Now())
	}
}

func (h *Handler) fail(t *task, code int64, msg string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if !t.status.Terminal() {
		t.err = &WireError{Code: code, Message: msg}
		t.end(StatusFailed, "", h.opts.Now())
	}
}

// settle records a round's answer in t. It returns the channel closed once an
// input_required round is answered, and ok false when the task is over.
func (h *Handler) settle(t *task, a callAnswer) (resume chan struct{}, ok bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	now := h.opts.Now()
	if t.status.Terminal() {
		return nil, false // cancelled meanwhile: what the call answered since is dropped
	}
	switch {
	case a.err != nil:
		t.err = a.err
		t.end(StatusFailed, "", now)
		return nil, false
	case a.result == nil:
		t.err = &WireError{Code: codeInternalError, Message: a.problem}
		t.end(StatusFailed, "", now)
		return nil, false
	}
	var round struct {
		ResultType    string                     `json:"resultType"`
		InputRequests map[string]json.RawMessage `json:"inputRequests"`
		RequestState  json.RawMessage            `json:"requestState"`
	}
	if json.Unmarshal(a.result, &round) != nil {
		t.err = &WireError{Code: codeInternalError, Message: "the call's result is not a JSON object"}
		t.end(StatusFailed, "", now)
		return nil, false
	}
	if round.ResultType != "input_required" {
		t.result = a.result
		t.size += int64(len(a.result))
		t.end(StatusCompleted, "", now)
		return nil, false
	}
	if len(round.InputRequests) == 0 {
		t.err = &WireError{Code: codeInternalError, Message: "the call asked for input without any input request"}
		t.end(StatusFailed, "", now)
		return nil, false
	}
	t.status, t.updated = StatusInputRequired, now
	t.size += int64(len(a.result))
	t.pending, t.answers, t.state = round.InputRequests, map[string]json.RawMessage{}, round.RequestState
	t.resume = make(chan struct{})
	return t.resume, true
}

// retryBody is the tools/call of env again, with answers as its inputResponses and
// state as its requestState (absent when the round gave none).
func retryBody(env envelope, answers map[string]json.RawMessage, state json.RawMessage) ([]byte, error) {
	var params map[string]json.RawMessage
	if err := json.Unmarshal(env.Params, &params); err != nil {
		return nil, err
	}
	a, err := json.Marshal(answers)
	if err != nil {
		return nil, err
	}
	params["inputResponses"] = a
	delete(params, "requestState")
	if len(state) > 0 && string(state) != "null" {
		params["requestState"] = state
	}
	p, err := json.Marshal(params)
	if err != nil {
		return nil, err
	}
	return json.Marshal(struct {
		JSONRPC string          `json:"jsonrpc"`
		ID      json.RawMessage `json:"id"`
		Method  string          `json:"method"`
		Params  json.RawMessage `json:"params"`
	}{"2.0", env.ID, env.Method, p})
}

// teeWriter is the ResponseWriter of a call that may become a task: until divert,
// what next writes goes to the client's response (w); after it, into buf.
type teeWriter struct {
	mu       sync.Mutex
	w        http.ResponseWriter // nil for a later round, diverted from the start
	header   http.Header
	diverted bool
	started  bool // w's header was written
	status   int
	buf      bytes.Buffer
}

func (tw *teeWriter) Header() http.Header {
	tw.mu.Lock()
	defer tw.mu.Unlock()
	return tw.header
}

func (tw *teeWriter) WriteHeader(code int) {
	tw.mu.Lock()
	defer tw.mu.Unlock()
	if tw.status == 0 {
		tw.status = code
	}
	if !tw.diverted && !tw.started {
		tw.started = true
		tw.w.WriteHeader(code)
	}
}

func (tw *teeWriter) Write(b []byte) (int, error) {
	tw.mu.Lock()
	defer tw.mu.Unlock()
	if tw.status == 0 {
		tw.status = http.StatusOK
	}
	if tw.diverted {
		return tw.buf.Write(b)
	}
	tw.started = true
	return tw.w.Write(b)
}

func (tw *teeWriter) Flush() {
	tw.mu.Lock()
	defer tw.mu.Unlock()
	if !tw.diverted && tw.started {
		if f, ok := tw.w.(http.Flusher); ok {
			f.Flush()
		}
	}
}

// divert sends what next writes from now on into the buffer; the header next
// sets from now on is its own.
func (tw *teeWriter) divert() {
	tw.mu.Lock()
	defer tw.mu.Unlock()
	tw.diverted = true
	tw.header = tw.header.Clone() // what next set so far (its Content-Type) stays known

}

// answer writes the CreateTaskResult to the client: as an SSE event when next had
// already begun an event stream, as a JSON body otherwise.
func (tw *teeWriter) answer(id json.RawMessage, created Task) {
	tw.mu.Lock()
	defer tw.mu.Unlock()
	msg, _ := json.Marshal(response{JSONRPC: "2.0", ID: id, Result: created})
	if tw.started {
		fmt.Fprintf(tw.w, "event: message\ndata: %s\n\n", msg)
		if f, ok := tw.w.(http.Flusher); ok {
			f.Flush()
		}
		return
	}
	tw.w.Header().Set("Content-Type", "application/json")
	tw.w.WriteHeader(http.StatusOK)
	tw.w.Write(msg)
}

// callAnswer is what a round's call answered: result or err, or problem when
// neither could be found.
type callAnswer struct {
	result  json.RawMessage
	err     *WireError
	problem string
}

// response finds, in what next wrote after divert (JSON or an event stream), the
// response to the request with id.
func (tw *teeWriter) response(id json.RawMessage) callAnswer {
	tw.mu.Lock()
	defer tw.mu.Unlock()
	data := tw.buf.Bytes()
	var msgs [][]byte
	if strings.Contains(tw.header.Get("Content-Type"), "text/event-stream") || !bytes.HasPrefix(bytes.TrimSpace(data), []byte("{")) {
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(make([]byte, 64<<10), len(data)+1)
		var event []byte
		for sc.Scan() {
			line := sc.Bytes()
			switch {
			case len(line) == 0:
				if len(event) > 0 {
					msgs = append(msgs, event)
				}
				event = nil
			case bytes.HasPrefix(line, []byte("data:")):
				event = append(event, bytes.TrimPrefix(bytes.TrimPrefix(line, []byte("data:")), []byte(" "))...)
			}
		}
		if len(event) > 0 {
			msgs = append(msgs, event)
		}
	} else {
		msgs = [][]byte{data}
	}
	for _, m := range msgs {
		var r struct {
			ID     json.RawMessage `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  *WireError      `json:"error"`
		}
		if json.Unmarshal(m, &r) != nil || !bytes.Equal(r.ID, id) {
			continue
		}
		if r.Error != nil {
			return callAnswer{err: r.Error}
		}
		if len(r.Result) > 0 {
			return callAnswer{result: r.Result}
		}
	}
	text := bytes.TrimSpace(data)
	if len(text) > 200 {
		text = text[:200]
	}
	return callAnswer{problem: fmt.Sprintf("the call ended without an answer (HTTP %d: %s)", tw.status, text)}
}

type response struct {
	JSONRPC string          `json:"jsonrpc"`
	ID      json.RawMessage `json:"id"`
	Result  any             `json:"result,omitempty"`
	Error   *WireError      `json:"error,omitempty"`
}

func writeResult(w http.ResponseWriter, id json.RawMessage, result any) {
	msg, _ := json.Marshal(response{JSONRPC: "2.0", ID: id, Result: result})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(http.StatusOK)
	w.Write(msg)
}

func writeError(w http.ResponseWriter, status int, id json.RawMessage, code int64, msg string, data json.RawMessage) {
	b, _ := json.Marshal(response{JSONRPC: "2.0", ID: id, Error: &WireError{Code: code, Message: msg, Data: data}})
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	w.Write(b)
}
