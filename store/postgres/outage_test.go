package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/store"
	"github.com/wardenhq/warden/store/postgres"
)

// proxy forwards TCP connections to the database and can be cut and restored, to
// play a database outage without stopping the shared server, or stalled: then it
// accepts connections and keeps them, and forwards nothing (what it reads is dropped),
// as a server that accepts connections and never answers.
type proxy struct {
	t        *testing.T
	addr     string // where the store connects
	upstream string

	mu      sync.Mutex
	ln      net.Listener      // nil while down
	conns   map[net.Conn]bool // open client and upstream connections
	stalled bool              // forward nothing; guarded by mu
	holes   map[net.Conn]bool // connections accepted while stalled; guarded by mu
}

func newProxy(t *testing.T, upstream string) *proxy {
	p := &proxy{t: t, upstream: upstream, conns: map[net.Conn]bool{}, holes: map[net.Conn]bool{}}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p.addr = ln.Addr().String()
	p.serve(ln)
	t.Cleanup(p.down)
	return p
}

func (p *proxy) serve(ln net.Listener) {
	p.mu.Lock()
	p.ln = ln
	p.mu.Unlock()
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			p.mu.Lock()
			stalled := p.stalled
			p.conns[c] = true
			if stalled {
				p.holes[c] = true
			}
			p.mu.Unlock()
			if stalled {
				go func() { io.Copy(io.Discard, c); c.Close() }() // kept, never answered
				continue
			}
			u, err := net.Dial("tcp", p.upstream)
			if err != nil {
				c.Close()
				continue
			}
			p.mu.Lock()
			p.conns[u] = true
			p.mu.Unlock()
			go p.pipe(u, c)
			go p.pipe(c, u)
		}
	}()
}

// pipe copies src to dst, dropping what it reads while the proxy is stalled, and
// closes dst when src ends.
func (p *proxy) pipe(dst, src net.Conn) {
	defer dst.Close()
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		p.mu.Lock()
		stalled := p.stalled
		p.mu.Unlock()
		if n > 0 && !stalled {
			if _, err := dst.Write(buf[:n]); err != nil {
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// stall makes the proxy forward nothing, on open and new connections, until resume.
func (p *proxy) stall() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stalled = true
}

// resume forwards again: new connections reach the database. The connections accepted
// while stalled are reset, as a server that recovers resets what it never read (an
// open connection that lost data while stalled is out of step, and is the client's
// to discard).
func (p *proxy) resume() {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.stalled = false
	for c := range p.holes {
		c.Close()
		delete(p.conns, c)
	}
	clear(p.holes)
}

// down refuses new connections and cuts the open ones.
func (p *proxy) down() {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.ln != nil {
		p.ln.Close()
		p.ln = nil
	}
	for c := range p.conns {
		c.Close()
	}
	clear(p.conns)
}

// up accepts connections again, on the same address.
func (p *proxy) up() {
	ln, err := net.Listen("tcp", p.addr)
	if err != nil {
		p.t.Fatal(err)
	}
	p.serve(ln)
}

// TestOutageFailsClosed cuts the database away: governed calls must fail (promptly,
// with an error), and succeed again once it is back, with no row lost or duplicated.
func TestOutageFailsClosed(t *testing.T) {
	dsn := freshSchema(t)
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	host := u.Host
	if u.Port() == "" {
		host = net.JoinHostPort(u.Hostname(), "5432")
	}
	p := newProxy(t, host)
	u.Host = p.addr
	q := u.Query()
	q.Set("connect_timeout", "2")
	u.RawQuery = q.Encode()
	s, err := postgres.Open(t.Context(), u.String(), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := t.Context()
	call := func(i int) error {
		ref, err := s.BeginCall(ctx, store.CallRecord{CallID: fmt.Sprint("c", i), Tool: "t", Executed: true})
		if err != nil {
			return err
		}
		return s.EndCall(ctx, ref, store.Completion{Status: warden.StatusRan})
	}
	for i := range 3 {
		if err := call(i); err != nil {
			t.Fatal(err)
		}
	}
	pend, err := s.CreatePending(ctx, store.Pending{Question: "q", Digest: "sha256:d"})
	if err != nil {
		t.Fatal(err)
	}

	p.down()
	start := time.Now()
	for i := 3; i < 6; i++ {
		if _, err := s.BeginCall(ctx, store.CallRecord{CallID: "down", Tool: "t", Executed: true}); err == nil {
			t.Fatal("BeginCall succeeded while the database was unreachable")
		}
	}
	if _, err := s.Decide(ctx, pend.ID, store.Verdict{Approve: true, By: "bob"}); err == nil {
		t.Fatal("Decide succeeded while the database was unreachable")
	}
	if _, ok, err := s.ConsumeApproval(ctx, "sha256:d", ""); err == nil || ok {
		t.Fatalf("ConsumeApproval during the outage = %v, %v; want an error", ok, err)
	}
	wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	_, err = s.WaitDecision(wctx, pend.ID)
	cancel()
	if err == nil || errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("WaitDecision during the outage: %v, want the failure to read the decision", err)
	}
	if took := time.Since(start); took > 30*time.Second {
		t.Errorf("failing during the outage took %v", took)
	}

	p.up() // listening again when it returns
	// The pool reconnects on demand: a call may still pick a connection the outage cut,
	// which fails at once and is dropped; each try uses up at most one such connection,
	// and new ones reach the database, so retrying needs no pause.
	var lastErr error
	for try := 0; try < 50; try++ {
		if lastErr = call(3); lastErr == nil {
			break
		}
	}
	if lastErr != nil {
		t.Fatalf("calls still fail after the database came back: %v", lastErr)
	}
	for i := 4; i < 6; i++ {
		if err := call(i); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := s.Decide(ctx, pend.ID, store.Verdict{Approve: true, By: "bob"}); err != nil {
		t.Fatalf("Decide after the outage: %v", err)
	}
	recs, err := s.QueryCalls(ctx, store.CallFilter{})
	if err != nil {
		t.Fatal(err)
	}
	if len(recs) != 6 {
		t.Errorf("%d calls recorded, want 6 (3 before, none during, 3 after the outage)", len(recs))
	}
	for _, r := range recs {
		if r.CallID == "down" || r.Status != warden.StatusRan {
			t.Errorf("unexpected record %+v", r)
		}
	}
	rep, err := s.VerifyAudit(ctx)
	if err != nil || !rep.OK || rep.Entries != 12 {
		t.Errorf("VerifyAudit = %+v, %v; want OK with 12 entries", rep, err)
	}
}
