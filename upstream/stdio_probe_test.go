package upstream

import (
	"context"
	"encoding/json"
	"os/exec"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// probeRecorder collects the ids the probe pinged with.
type probeRecorder struct {
	mu  sync.Mutex
	ids []jsonrpc.ID
}

func (r *probeRecorder) ping(id jsonrpc.ID) {
	r.mu.Lock()
	r.ids = append(r.ids, id)
	r.mu.Unlock()
}

func (r *probeRecorder) first() jsonrpc.ID {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.ids[0]
}

func (r *probeRecorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.ids)
}

func mustID(t *testing.T, v any) jsonrpc.ID {
	t.Helper()
	id, err := jsonrpc.MakeID(v)
	if err != nil {
		t.Fatal(err)
	}
	return id
}

// A call unanswered by a silent child gets one ping per quiet period, exactly on
// the bubble's clock; anything read from the child restarts the period; the answer
// ends the pings.
func TestLivenessPingsSilentChild(t *testing.T) {
	synctest.Test(t, func(t *testing.T) {
		const quiet = time.Second
		rec := &probeRecorder{}
		l := newLiveness(quiet, rec.ping)
		defer l.stop()
		expect := func(n int, when string) {
			t.Helper()
			synctest.Wait()
			if got := rec.count(); got != n {
				t.Fatalf("%s: %d pings, want %d", when, got, n)
			}
		}

		l.wrote(callMessage(t, 1))
		time.Sleep(quiet - time.Nanosecond)
		expect(0, "just before the quiet period ends")
		time.Sleep(time.Nanosecond)
		expect(1, "when it ends")
		if got, want := rec.first(), mustID(t, "warden-probe-1"); got != want {
			t.Errorf("ping id %v, want %v", got.Raw(), want.Raw())
		}
		time.Sleep(quiet)
		expect(2, "a quiet period later")

		// A notification from the child is a sign of life: the period restarts.
		time.Sleep(quiet / 2)
		l.heard(&jsonrpc.Request{Method: "notifications/progress"})
		time.Sleep(quiet - time.Nanosecond)
		expect(2, "a quiet period after the last ping, but less after the notification")
		time.Sleep(time.Nanosecond)
		expect(3, "a quiet period after the notification")

		// The answer to the probe is the probe's; the call's answer ends the pings.
		if !l.heard(&jsonrpc.Response{ID: mustID(t, "warden-probe-3"), Result: json.RawMessage(`{}`)}) {
			t.Error("the answer to a probe ping was not recognized as the probe's")
		}
		if l.heard(&jsonrpc.Response{ID: mustID(t, float64(1)), Result: json.RawMessage(`{}`)}) {
			t.Error("the call's answer was taken for the probe's")
		}
		time.Sleep(10 * quiet)
		expect(3, "after the answer")

		// A cancelled call is not waited for either.
		l.wrote(callMessage(t, 2))
		l.wrote(&jsonrpc.Request{Method: "notifications/cancelled", Params: json.RawMessage(`{"requestId":2,"reason":"gone"}`)})
		time.Sleep(10 * quiet)
		expect(3, "after the call was cancelled")

		// A call whose write failed is not waited for.
		l.wrote(callMessage(t, 4))
		l.unwritten(callMessage(t, 4))
		time.Sleep(10 * quiet)
		expect(3, "after a call's write failed")

		// A notification written is not a call; after stop, nothing.
		l.wrote(&jsonrpc.Request{Method: "notifications/initialized"})
		time.Sleep(10 * quiet)
		expect(3, "after a notification was written")
		l.wrote(callMessage(t, 3))
		l.stop()
		time.Sleep(10 * quiet)
		expect(3, "after stop")
	})
}

// A child that answers a call only once something more is written to its stdin
// (as a stalled Go 1.26 server does) is woken by the probe's ping, and the
// answer to the ping is not handed to the SDK.
func TestStdioProbeWakesStalledChild(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skipf("sh not found: %v", err)
	}
	script := `read call
read ping
case "$ping" in
*'"id":"warden-probe-1","method":"ping"'*) ;;
*) echo "want the probe's ping, got: $ping" >&2; exit 9 ;;
esac
printf '%s\n' '{"jsonrpc":"2.0","id":"warden-probe-1","result":{}}' '{"jsonrpc":"2.0","id":1,"result":{"ok":true}}'
read rest
`
	cmd := exec.Command("sh", "-c", script)
	dieWithGateway(cmd)
	conn, err := (&commandTransport{Command: cmd, TerminateDuration: time.Second, ProbeQuiet: 20 * time.Millisecond}).Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := conn.Write(ctx, callMessage(t, 1)); err != nil {
		t.Fatal(err)
	}
	msg, err := conn.Read(ctx)
	if err != nil {
		t.Fatalf("no answer after the probe: %v", err)
	}
	resp, ok := msg.(*jsonrpc.Response)
	if !ok || resp.ID != mustID(t, float64(1)) || string(resp.Result) != `{"ok":true}` {
		t.Fatalf("read %#v, want the answer to call 1", msg)
	}
	if n := conn.(*stdioConn).live.pings(); n < 1 {
		t.Errorf("%d pings, want at least 1", n) // more when the child is slow to answer
	}
}
