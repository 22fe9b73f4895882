package upstream

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// wireLogOf returns the wire log of the open connection to pid.
func wireLogOf(t *testing.T, pid int) WireLog {
	t.Helper()
	logs := StdioWireLogs()
	i := slices.IndexFunc(logs, func(l WireLog) bool { return l.PID == pid })
	if i < 0 {
		t.Fatalf("no wire log of server process %d among %d", pid, len(logs))
	}
	return logs[i]
}

// TestStdioWireLog: a connection records each message it writes, reads and hands
// to the SDK, with its id and method; Trace tells a call whose response was read
// back from one whose was not; a closed connection's log is gone.
func TestStdioWireLog(t *testing.T) {
	conn, cmd := connectStdio(t, 0, "cat")
	ctx := context.Background()
	pid := cmd.Process.Pid
	call := callMessage(t, 7)
	// cat sends the call back as it is: a call read, not a response.
	if err := conn.Write(ctx, call); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Read(ctx); err != nil {
		t.Fatal(err)
	}
	l := wireLogOf(t, pid)
	if got, want := l.Trace(call.ID), fmt.Sprintf("server process %d, id 7: tools/call written to the server at %s; no response with that id read back from the server",
		pid, l.Entries[0].At.UTC().Format(time.RFC3339Nano)); got != want {
		t.Errorf("Trace before the response:\n got %s\nwant %s", got, want)
	}
	if out := l.Outstanding(); len(out) != 1 || out[0].ID != call.ID || out[0].Method != "tools/call" {
		t.Errorf("Outstanding = %v, want the call with id 7", out)
	}
	if err := conn.Write(ctx, &jsonrpc.Response{ID: call.ID, Result: []byte(`{}`)}); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.Read(ctx); err != nil {
		t.Fatal(err)
	}
	l = wireLogOf(t, pid)
	var kinds []string
	for _, e := range l.Entries {
		kinds = append(kinds, fmt.Sprintf("%s %s %v %s", e.Stage, e.Kind(), e.ID.Raw(), e.Method))
	}
	want := []string{
		"written call 7 tools/call", "read call 7 tools/call", "delivered call 7 tools/call",
		"written response 7 ", "read response 7 ", "delivered response 7 ",
	}
	if !slices.Equal(kinds, want) {
		t.Errorf("entries:\n%s\nwant\n%s", strings.Join(kinds, "\n"), strings.Join(want, "\n"))
	}
	if l.Counts != [WireDelivered + 1]uint64{0, 2, 0, 2, 2} {
		t.Errorf("Counts = %v, want 2 written, 2 read, 2 delivered", l.Counts)
	}
	if got, want := l.Trace(call.ID), fmt.Sprintf("server process %d, id 7: tools/call written to the server at %s; its response was read from the server at %s and handed to the SDK at %s",
		pid, l.Entries[0].At.UTC().Format(time.RFC3339Nano), l.Entries[4].At.UTC().Format(time.RFC3339Nano), l.Entries[5].At.UTC().Format(time.RFC3339Nano)); got != want {
		t.Errorf("Trace after the response:\n got %s\nwant %s", got, want)
	}
	if out := l.Outstanding(); len(out) != 0 {
		t.Errorf("Outstanding after the response = %v, want none", out)
	}
	other, _ := jsonrpc.MakeID("other")
	if got, want := l.Trace(other), fmt.Sprintf("server process %d, id other: not written to the server (among its last messages)", pid); got != want {
		t.Errorf("Trace of an unknown id:\n got %s\nwant %s", got, want)
	}
	if err := conn.Close(); err != nil {
		t.Fatal(err)
	}
	if slices.ContainsFunc(StdioWireLogs(), func(l WireLog) bool { return l.PID == pid }) {
		t.Error("the closed connection's wire log is still listed")
	}
}

// TestWireRingWraps: the ring keeps the last wireRingSize messages, oldest first,
// and counts every one.
func TestWireRingWraps(t *testing.T) {
	r := &wireRing{pid: 1}
	for i := range wireRingSize + 44 {
		id, _ := jsonrpc.MakeID(float64(i))
		r.record(WireWritten, &jsonrpc.Request{ID: id, Method: "ping"})
	}
	l := r.snapshot()
	if len(l.Entries) != wireRingSize || l.Counts[WireWritten] != wireRingSize+44 {
		t.Fatalf("%d entries, %d written; want %d and %d", len(l.Entries), l.Counts[WireWritten], wireRingSize, wireRingSize+44)
	}
	if first, last := l.Entries[0].ID.Raw(), l.Entries[wireRingSize-1].ID.Raw(); first != int64(44) || last != int64(wireRingSize+43) {
		t.Errorf("entries from id %v to %v, want 44 to %d", first, last, wireRingSize+43)
	}
}

// A subscriptions/listen (the 2026-07-28 stream of a connection's notifications) is
// answered only when the connection ends: Outstanding leaves it out, and keeps a
// call without its response.
func TestWireLogOutstandingLeavesOutListen(t *testing.T) {
	listen, _ := jsonrpc.MakeID(float64(2))
	call, _ := jsonrpc.MakeID(float64(5))
	l := WireLog{Entries: []WireEntry{
		{Stage: WireWritten, ID: listen, Method: listenMethod},
		{Stage: WireWritten, ID: call, Method: "tools/call"},
	}}
	if out := l.Outstanding(); len(out) != 1 || out[0].ID != call {
		t.Errorf("Outstanding = %v, want only the tools/call", out)
	}
}
