package main

import (
	"context"
	"fmt"
	"log"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// serverRingSize is the number of messages -wire-dump remembers.
const serverRingSize = 4096

// wireConn records the ids and methods of the messages the server reads from its
// client and writes to it, in a ring of the last serverRingSize, so that a test
// that lost an answer can ask the server whether it received the call and wrote
// its response: on SIGUSR1 the ring is written to dir/faultserver-<pid>.wire.txt.
// The wrapper hides the SDK connection's unexported methods: the SDK does not tell
// it the negotiated protocol version, so it does not refuse incoming batches under
// a version that forbids them (no test of batches uses -wire-dump).
type wireConn struct {
	mcp.Connection

	mu      sync.Mutex
	next    uint64
	counts  [2]uint64 // received, sent
	entries [serverRingSize]wireEntry
}

type wireEntry struct {
	at       time.Time
	sent     bool // written to the client (else received from it)
	id       jsonrpc.ID
	method   string
	response bool
	err      error // of the Read or Write
}

func (c *wireConn) record(sent bool, msg jsonrpc.Message, err error) {
	e := wireEntry{at: time.Now(), sent: sent, err: err}
	switch m := msg.(type) {
	case *jsonrpc.Request:
		e.id, e.method = m.ID, m.Method
	case *jsonrpc.Response:
		e.id, e.response = m.ID, true
	}
	c.mu.Lock()
	c.entries[c.next%serverRingSize] = e
	c.next++
	if sent {
		c.counts[1]++
	} else {
		c.counts[0]++
	}
	c.mu.Unlock()
}

func (c *wireConn) Read(ctx context.Context) (jsonrpc.Message, error) {
	msg, err := c.Connection.Read(ctx)
	if err == nil {
		c.record(false, msg, nil)
	}
	return msg, err
}

func (c *wireConn) Write(ctx context.Context, msg jsonrpc.Message) error {
	err := c.Connection.Write(ctx, msg)
	c.record(true, msg, err)
	return err
}

// dumpOnSignal writes the ring to dir at every SIGUSR1.
func (c *wireConn) dumpOnSignal(dir string) {
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGUSR1)
	go func() {
		for range sig {
			if err := c.dump(dir); err != nil {
				log.Printf("wire dump: %v", err)
			}
		}
	}()
}

func (c *wireConn) dump(dir string) error {
	c.mu.Lock()
	n := min(c.next, serverRingSize)
	entries := make([]wireEntry, 0, n)
	for i := c.next - n; i < c.next; i++ {
		entries = append(entries, c.entries[i%serverRingSize])
	}
	counts := c.counts
	c.mu.Unlock()

	var b strings.Builder
	fmt.Fprintf(&b, "faultserver %d at %s: received %d messages, sent %d; the last %d:\n", os.Getpid(), time.Now().UTC().Format(time.RFC3339Nano), counts[0], counts[1], len(entries))
	for i, e := range entries {
		dir, kind := "received", "notification"
		if e.sent {
			dir = "sent"
		}
		switch {
		case e.response:
			kind = "response"
		case e.id.IsValid():
			kind = "call"
		}
		id := "-"
		if e.id.IsValid() {
			id = fmt.Sprint(e.id.Raw())
		}
		fmt.Fprintf(&b, "  %s %-8s %-12s id=%s %s", e.at.UTC().Format("15:04:05.000000"), dir, kind, id, e.method)
		if e.err != nil {
			fmt.Fprintf(&b, " (error: %v)", e.err)
		}
		if kind == "call" && !e.sent && !answered(entries[i+1:], e.id) {
			b.WriteString("  <- no response sent")
		}
		b.WriteByte('\n')
	}
	name := filepath.Join(dir, fmt.Sprintf("faultserver-%d.wire.txt", os.Getpid()))
	if err := os.WriteFile(name+".tmp", []byte(b.String()), 0o600); err != nil {
		return err
	}
	return os.Rename(name+".tmp", name)
}

// answered reports whether later holds a response sent with id.
func answered(later []wireEntry, id jsonrpc.ID) bool {
	for _, e := range later {
		if e.sent && e.response && e.id == id && e.err == nil {
			return true
		}
	}
	return false
}
