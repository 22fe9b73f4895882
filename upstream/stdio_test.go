package upstream

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// connectStdio starts name with args over a commandTransport whose line limit is
// limit (0: the default) and returns the connection, closed at the end of t.
func connectStdio(t *testing.T, limit int, name string, args ...string) (*stdioConn, *exec.Cmd) {
	t.Helper()
	if _, err := exec.LookPath(name); err != nil {
		t.Skipf("%s not found on PATH: %v", name, err)
	}
	cmd := exec.Command(name, args...)
	dieWithGateway(cmd)
	conn, err := (&commandTransport{Command: cmd, TerminateDuration: 5 * time.Second, MaxLineLength: limit}).Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	return conn.(*stdioConn), cmd
}

// sh runs a shell script as the child.
func sh(t *testing.T, limit int, script string) (*stdioConn, *exec.Cmd) {
	t.Helper()
	return connectStdio(t, limit, "sh", "-c", script)
}

func callMessage(t testing.TB, id float64) *jsonrpc.Request {
	mid, err := jsonrpc.MakeID(id)
	if err != nil {
		t.Fatal(err)
	}
	return &jsonrpc.Request{ID: mid, Method: "tools/call", Params: json.RawMessage(`{"name":"echo","arguments":{"text":"hello"}}`)}
}

// TestStdioRoundTrip sends messages through cat and reads them back unchanged.
func TestStdioRoundTrip(t *testing.T) {
	conn, _ := connectStdio(t, 0, "cat")
	ctx := context.Background()
	for i := range 3 {
		want := callMessage(t, float64(i+1))
		if err := conn.Write(ctx, want); err != nil {
			t.Fatal(err)
		}
		got, err := conn.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		r, ok := got.(*jsonrpc.Request)
		if !ok || r.ID != want.ID || r.Method != want.Method || string(r.Params) != string(want.Params) {
			t.Fatalf("read back %#v, want %#v", got, want)
		}
	}
	if err := conn.Close(); err != nil {
		t.Errorf("Close of a child that exits when its stdin closes: %v", err)
	}
}

// TestStdioAllocBudget pins what the transport allocates for one round trip of a
// small tools/call message through cat (a write and a read): the SDK's stdio
// connection allocates over 64 KiB for it (two 32 KiB decoder buffers per message
// read); this one must stay under 2 KiB.
func TestStdioAllocBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("measures allocations")
	}
	conn, _ := connectStdio(t, 0, "cat")
	ctx := context.Background()
	msg := callMessage(t, 42)
	roundTrip := func() {
		if err := conn.Write(ctx, msg); err != nil {
			t.Fatal(err)
		}
		if _, err := conn.Read(ctx); err != nil {
			t.Fatal(err)
		}
	}
	roundTrip() // warm the pools
	const runs = 500
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range runs {
		roundTrip()
	}
	runtime.ReadMemStats(&after)
	perCall := (after.TotalAlloc - before.TotalAlloc) / runs
	allocs := testing.AllocsPerRun(runs, roundTrip)
	t.Logf("per round trip: %d bytes, %.1f allocations", perCall, allocs)
	const budget = 2 << 10
	if perCall > budget {
		t.Errorf("a round trip allocates %d bytes, want at most %d", perCall, budget)
	}
	if allocs > 20 {
		t.Errorf("a round trip makes %.1f allocations, want at most 20", allocs)
	}
}

// TestStdioCallAllocBudget pins the bytes allocated per tools/call to the fault
// server through an SDK client session over this transport. What is left after the
// transport is the SDK's decoding of the call's result (two 32 KiB decoder buffers);
// over the SDK's CommandTransport the same call allocates about 130 KiB.
func TestStdioCallAllocBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("measures allocations")
	}
	cs := connectFault(t, func(cmd *exec.Cmd) mcp.Transport {
		return &commandTransport{Command: cmd, TerminateDuration: terminateGrace}
	})
	params := &mcp.CallToolParams{Name: "echo", Arguments: map[string]any{"text": "hello"}}
	call := func() {
		if res, err := cs.CallTool(context.Background(), params); err != nil || res.IsError {
			t.Fatalf("call: %v %v", res, err)
		}
	}
	call()
	const runs = 200
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range runs {
		call()
	}
	runtime.ReadMemStats(&after)
	perCall := (after.TotalAlloc - before.TotalAlloc) / runs
	t.Logf("per call: %d bytes", perCall)
	const budget = 80 << 10
	if perCall > budget {
		t.Errorf("a call allocates %d bytes, want at most %d", perCall, budget)
	}
}

func TestStdioLineTooLong(t *testing.T) {
	conn, cmd := sh(t, 1024, `printf '{"jsonrpc":"2.0","id":1,"result":"'; head -c 4096 /dev/zero | tr '\0' x; printf '"}\n'; cat >/dev/null`)
	_, err := conn.Read(context.Background())
	if err == nil || !errors.Is(err, errLineTooLong) || !strings.Contains(err.Error(), "(1024 bytes)") || !strings.Contains(err.Error(), "raise the limit") {
		t.Fatalf("Read = %v, want the line length error naming the limit", err)
	}
	if !strings.Contains(err.Error(), "server process") {
		t.Errorf("the error %q does not name the server process", err)
	}
	// The SDK closes a connection whose Read failed: the child, which reads its
	// stdin to the end, exits, and nothing more is read.
	if err := conn.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if cmd.ProcessState == nil {
		t.Error("the child was not reaped by Close")
	}
	if _, err := conn.Read(context.Background()); err != io.EOF {
		t.Errorf("Read after Close = %v, want io.EOF", err)
	}
}

// TestStdioDefaultLimit: without MaxLineLength, the SDK's limit applies: a line one
// byte over it is refused, one at it is read.
func TestStdioDefaultLimit(t *testing.T) {
	if testing.Short() {
		t.Skip("writes 32 MiB through a pipe")
	}
	prefix, suffix := `{"jsonrpc":"2.0","id":1,"result":"`, `"}`
	fill := mcp.DefaultMaxLineLength - len(prefix) - len(suffix)
	script := func(n int) string {
		return `printf '` + prefix + `'; head -c ` + strconv.Itoa(n) + ` /dev/zero | tr '\0' x; printf '` + suffix + `\n'; cat >/dev/null`
	}
	conn, _ := sh(t, 0, script(fill))
	m, err := conn.Read(context.Background())
	if err != nil {
		t.Fatalf("Read of a message of exactly the limit: %v", err)
	}
	if r := m.(*jsonrpc.Response); len(r.Result) != fill+2 {
		t.Errorf("result of %d bytes, want %d", len(r.Result), fill+2)
	}
	conn, _ = sh(t, 0, script(fill+1))
	if _, err := conn.Read(context.Background()); !errors.Is(err, errLineTooLong) {
		t.Fatalf("Read of a message one byte over the limit = %v, want the line length error", err)
	}
}

func TestStdioInvalidJSON(t *testing.T) {
	for _, tc := range []struct{ name, line, want string }{
		{"not json", `}{ this is not json`, "want a JSON-RPC object or batch array"},
		{"bad object", `{"jsonrpc":"2.0", bad}`, "not valid JSON"},
		{"not json-rpc", `{"jsonrpc":"1.0","id":1,"result":1}`, `invalid message version tag "1.0"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			conn, _ := sh(t, 0, `printf '%s\n' '`+tc.line+`'; printf '{"jsonrpc":"2.0","id":2,"result":2}\n'; cat >/dev/null`)
			_, err := conn.Read(context.Background())
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Read = %v, want an error holding %q", err, tc.want)
			}
			// Nothing after a bad message is read, however good: once closed (as
			// the SDK closes it after a read error), Read has only its end to give.
			conn.Close()
			for range 20 {
				if m, err := conn.Read(context.Background()); err != io.EOF {
					t.Fatalf("Read after the error and Close = %v, %v; want io.EOF", m, err)
				}
			}
		})
	}
}

func TestStdioExitMidMessage(t *testing.T) {
	conn, cmd := sh(t, 0, `printf '{"jsonrpc":"2.0","id":1,"result":{"content":['; exit 3`)
	_, err := conn.Read(context.Background())
	if !errors.Is(err, io.ErrUnexpectedEOF) || !strings.Contains(err.Error(), "ended inside a message") {
		t.Fatalf("Read = %v, want the output ending inside a message", err)
	}
	var ee *exec.ExitError
	if err := conn.Close(); !errors.As(err, &ee) || ee.ExitCode() != 3 {
		t.Errorf("Close = %v, want the child's exit status 3", err)
	}
	if cmd.ProcessState == nil {
		t.Error("not reaped")
	}
}

// TestStdioEOF: output ending between messages reads as io.EOF, after the messages.
func TestStdioEOF(t *testing.T) {
	conn, _ := sh(t, 0, `printf '{"jsonrpc":"2.0","id":1,"result":1}\n\n'`)
	if _, err := conn.Read(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Read(context.Background()); err != io.EOF {
		t.Fatalf("Read at the end = %v, want io.EOF", err)
	}
}

func TestStdioCloseUnblocksRead(t *testing.T) {
	conn, cmd := connectStdio(t, 0, "cat")
	read := make(chan error, 1)
	go func() {
		_, err := conn.Read(context.Background())
		read <- err
	}()
	if err := conn.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := <-read; err != io.EOF {
		t.Errorf("blocked Read returned %v after Close, want io.EOF", err)
	}
	if cmd.ProcessState == nil || !cmd.ProcessState.Exited() {
		t.Errorf("child not reaped after Close: %v", cmd.ProcessState)
	}
}

func TestStdioReadContext(t *testing.T) {
	conn, _ := connectStdio(t, 0, "cat")
	ctx, cancel := context.WithCancel(context.Background())
	read := make(chan error, 1)
	go func() {
		_, err := conn.Read(ctx)
		read <- err
	}()
	cancel()
	if err := <-read; err != context.Canceled {
		t.Errorf("Read with its context cancelled = %v, want context.Canceled", err)
	}
	// The connection still works.
	if err := conn.Write(context.Background(), callMessage(t, 1)); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Read(context.Background()); err != nil {
		t.Fatal(err)
	}
}

func TestStdioCloseTwiceConcurrently(t *testing.T) {
	conn, cmd := sh(t, 0, `cat >/dev/null; exit 4`)
	var wg sync.WaitGroup
	errs := make([]error, 2)
	for i := range errs {
		wg.Go(func() { errs[i] = conn.Close() })
	}
	wg.Wait()
	var ee *exec.ExitError
	if !errors.As(errs[0], &ee) || ee.ExitCode() != 4 || errs[0] != errs[1] {
		t.Errorf("Close results %v and %v, want the same exit status 4 from both", errs[0], errs[1])
	}
	if cmd.ProcessState == nil {
		t.Error("not reaped")
	}
	if err := conn.Close(); err != errs[0] {
		t.Errorf("third Close = %v, want %v", err, errs[0])
	}
}

func TestStdioWriteAfterClose(t *testing.T) {
	conn, _ := connectStdio(t, 0, "cat")
	if err := conn.Close(); err != nil {
		t.Fatal(err)
	}
	err := conn.Write(context.Background(), callMessage(t, 1))
	if !errors.Is(err, mcp.ErrConnectionClosed) || !strings.Contains(err.Error(), "server process") {
		t.Errorf("Write after Close = %v, want mcp.ErrConnectionClosed naming the process", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := conn.Write(ctx, callMessage(t, 1)); err != context.Canceled {
		t.Errorf("Write with an ended context = %v, want context.Canceled", err)
	}
}

// TestStdioWriteToExitedChild: a child gone is a write error, not a hang.
func TestStdioWriteToExitedChild(t *testing.T) {
	conn, _ := sh(t, 0, `exec 0<&-; exit 0`)
	// Its stdin is closed as soon as it runs; writes fail from then on.
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := conn.Write(context.Background(), callMessage(t, 1))
		if err != nil {
			if !strings.Contains(err.Error(), "writing to server process") {
				t.Errorf("Write error %q does not say where", err)
			}
			return
		}
		if time.Now().After(deadline) {
			t.Fatal("writes to a child that closed its stdin kept succeeding")
		}
		runtime.Gosched()
	}
}

// TestStdioConcurrentWrites: lines from concurrent writers never interleave.
func TestStdioConcurrentWrites(t *testing.T) {
	conn, _ := connectStdio(t, 0, "cat")
	const writers, each = 4, 50
	big := strings.Repeat("w", 3*stdioReadBuffer)
	var wg sync.WaitGroup
	for w := range writers {
		wg.Go(func() {
			for i := range each {
				mid, _ := jsonrpc.MakeID(float64(w*each + i + 1))
				p, _ := json.Marshal(map[string]string{"text": big})
				if err := conn.Write(context.Background(), &jsonrpc.Request{ID: mid, Method: "m", Params: p}); err != nil {
					t.Error(err)
					return
				}
			}
		})
	}
	seen := map[any]bool{}
	for range writers * each {
		m, err := conn.Read(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		r := m.(*jsonrpc.Request)
		var p map[string]string
		if err := json.Unmarshal(r.Params, &p); err != nil || p["text"] != big {
			t.Fatalf("message %v garbled: %v", r.ID.Raw(), err)
		}
		seen[r.ID.Raw()] = true
	}
	wg.Wait()
	if len(seen) != writers*each {
		t.Errorf("%d distinct messages, want %d", len(seen), writers*each)
	}
}

// TestStdioBatch: an incoming batch is read message by message, and the responses
// to its calls are written together as one array, as the SDK does.
func TestStdioBatch(t *testing.T) {
	out := filepath.Join(t.TempDir(), "in.txt")
	conn, _ := sh(t, 0, `printf '%s\n' '[{"jsonrpc":"2.0","id":"a","method":"ping"},{"jsonrpc":"2.0","method":"notifications/x"},{"jsonrpc":"2.0","id":"b","method":"roots/list"}]'; cat > `+out)
	ctx := context.Background()
	var ids []jsonrpc.ID
	for range 3 {
		m, err := conn.Read(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if r := m.(*jsonrpc.Request); r.IsCall() {
			ids = append(ids, r.ID)
		}
	}
	if len(ids) != 2 {
		t.Fatalf("read %d calls, want 2", len(ids))
	}
	if err := conn.Write(ctx, &jsonrpc.Response{ID: ids[1], Result: json.RawMessage(`{"roots":[]}`)}); err != nil {
		t.Fatal(err)
	}
	if err := conn.Write(ctx, &jsonrpc.Response{ID: ids[0], Result: json.RawMessage(`{}`)}); err != nil {
		t.Fatal(err)
	}
	if err := conn.Close(); err != nil {
		t.Fatal(err)
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	want := `[{"jsonrpc":"2.0","id":"a","result":{}},{"jsonrpc":"2.0","id":"b","result":{"roots":[]}}]` + "\n"
	if string(got) != want {
		t.Errorf("the child read %q, want %q", got, want)
	}
}

func TestStdioBatchDuplicateID(t *testing.T) {
	conn, _ := sh(t, 0, `printf '%s\n' '[{"jsonrpc":"2.0","id":1,"method":"ping"},{"jsonrpc":"2.0","id":1,"method":"ping"}]'; cat >/dev/null`)
	if _, err := conn.Read(context.Background()); err == nil || !strings.Contains(err.Error(), "twice") {
		t.Fatalf("Read = %v, want the duplicate id refused", err)
	}
}

func TestStdioConnectErrors(t *testing.T) {
	if _, err := (&commandTransport{}).Connect(context.Background()); err == nil {
		t.Error("Connect without a command: no error")
	}
	cmd := exec.Command(filepath.Join(t.TempDir(), "missing"))
	if _, err := (&commandTransport{Command: cmd}).Connect(context.Background()); err == nil {
		t.Error("Connect of a missing program: no error")
	}
}

// TestServerCallAllocBudget pins the bytes a Server allocates per call of a
// command server, which the pool connects over commandTransport: over the SDK's
// CommandTransport the same calls allocate about 64 KiB more each.
func TestServerCallAllocBudget(t *testing.T) {
	if testing.Short() {
		t.Skip("measures allocations")
	}
	u := newUpstream(t, faultServer("fault", "-mode", "ok"), Options{Policy: faultPolicy(1)})
	discover(t, u)
	call := func() {
		r, err := u.Call(context.Background(), "echo", json.RawMessage(`{"text":"hi"}`), nil)
		if err != nil || textOf(t, r) != "hi" {
			t.Fatalf("call: %v %v", r, err)
		}
	}
	call()
	const runs = 200
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	for range runs {
		call()
	}
	runtime.ReadMemStats(&after)
	perCall := (after.TotalAlloc - before.TotalAlloc) / runs
	t.Logf("per call: %d bytes", perCall)
	const budget = 96 << 10
	if perCall > budget {
		t.Errorf("a call allocates %d bytes, want at most %d", perCall, budget)
	}
}
