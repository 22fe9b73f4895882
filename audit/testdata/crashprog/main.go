// Command crashprog is a test program for package audit: the reliability tests run it
// as a separate OS process against a store and kill it with SIGKILL, or decide what it
// waits for from another process.
//
//	crashprog midcall DSN     one completed call, then a call whose tool prints
//	                          "running" and blocks forever (kill it there)
//	crashprog pending DSN N   creates N pending decisions, prints each ID on a line,
//	                          then "ready", and blocks forever
//	crashprog stream DSN      4 callers make calls forever through a journal with
//	                          deferred completions; each call's tool prints
//	                          "ran ID" (so after its intent was committed); the test
//	                          kills the process at a random point
//	crashprog wait DSN        creates a pending decision, prints "waiting ID", waits
//	                          for it (WaitDecision, 60s at most) and prints the
//	                          decision as one JSON line
//
// It exits 2 on bad usage and 1 when something fails, with the error on stderr.
package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"time"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/audit"
	"github.com/wardenhq/warden/store"
	_ "github.com/wardenhq/warden/store/postgres"
	_ "github.com/wardenhq/warden/store/sqlite"
)

func main() {
	if len(os.Args) < 3 {
		fmt.Fprintln(os.Stderr, "usage: crashprog midcall|pending|wait DSN [N]")
		os.Exit(2)
	}
	ctx := context.Background()
	s, err := store.Open(ctx, os.Args[2])
	if err != nil {
		fail(err)
	}
	switch os.Args[1] {
	case "midcall":
		midcall(ctx, s)
	case "pending":
		n, err := strconv.Atoi(os.Args[3])
		if err != nil || n <= 0 {
			fmt.Fprintln(os.Stderr, "pending: N must be a positive number")
			os.Exit(2)
		}
		pending(ctx, s, n)
	case "wait":
		wait(ctx, s)
	case "stream":
		stream(ctx, s)
	default:
		fmt.Fprintf(os.Stderr, "unknown mode %q\n", os.Args[1])
		os.Exit(2)
	}
}

func fail(err error) {
	fmt.Fprintln(os.Stderr, "crashprog:", err)
	os.Exit(1)
}

// midcall records one completed call, then starts a call whose tool never returns.
func midcall(ctx context.Context, s store.Store) {
	r := &warden.Registry{}
	tools := []warden.Executable{
		{Tool: warden.Tool{Name: "echo"}, Run: func(_ context.Context, a warden.Args, _ *warden.Credential) (any, error) {
			return a.Map(), nil
		}},
		{Tool: warden.Tool{Name: "deploy"}, Run: func(context.Context, warden.Args, *warden.Credential) (any, error) {
			fmt.Println("running")
			select {} // the test kills the process here, between Begin and End
		}},
	}
	for _, t := range tools {
		if err := r.Register(t); err != nil {
			fail(err)
		}
	}
	g, err := r.Bind(warden.Config{Ungoverned: true, Journal: audit.NewJournal(s, nil), Revision: "crashprog"})
	if err != nil {
		fail(err)
	}
	id := warden.Identity{Principal: "ann"}
	o, err := g.Call(ctx, warden.Call{ID: "before-1", Tool: "echo", Args: warden.MustParseArgs(`{"n":1}`), Identity: id, Session: "s-crash"})
	if err != nil || o.Status != warden.StatusRan {
		fail(fmt.Errorf("first call: %s %v", o.Status, err))
	}
	_, err = g.Call(ctx, warden.Call{ID: "crash-1", Tool: "deploy", Args: warden.MustParseArgs(`{"env":"prod"}`), Identity: id, Session: "s-crash"})
	fail(fmt.Errorf("the blocking call returned: %v", err))
}

// stream makes calls from 4 goroutines until the process is killed.
func stream(ctx context.Context, s store.Store) {
	r := &warden.Registry{}
	err := r.Register(warden.Executable{Tool: warden.Tool{Name: "step"}, Run: func(ctx context.Context, a warden.Args, _ *warden.Credential) (any, error) {
		id, _ := a.Map()["id"].(string)
		fmt.Println("ran " + id) // one write(2): the line is out before the tool returns
		return "ok", nil
	}})
	if err != nil {
		fail(err)
	}
	g, err := r.Bind(warden.Config{Ungoverned: true, Journal: audit.NewJournal(s, &audit.Options{Deferred: true}), Revision: "crashprog"})
	if err != nil {
		fail(err)
	}
	for w := range 4 {
		go func() {
			for i := 0; ; i++ {
				id := fmt.Sprintf("p%d-w%d-%d", os.Getpid(), w, i) // unique across the test's rounds
				o, err := g.Call(ctx, warden.Call{ID: id, Tool: "step", Args: warden.MustParseArgs(`{"id":"` + id + `"}`)})
				if err != nil || o.Status != warden.StatusRan {
					fail(fmt.Errorf("call %s: %s %v", id, o.Status, err))
				}
			}
		}()
	}
	select {}
}

// pending creates n decisions and blocks.
func pending(ctx context.Context, s store.Store, n int) {
	for i := range n {
		args := warden.MustParseArgs(fmt.Sprintf(`{"n":%d}`, i))
		p, err := s.CreatePending(ctx, store.Pending{
			Kind: warden.KindCheckIn, Question: fmt.Sprintf("Run step %d?", i), Tool: "step",
			Args: args.AppendJSON(nil), Digest: args.Digest(), Session: "s-crash",
			Identity: warden.Identity{Principal: "ann"}, Expires: time.Now().Add(time.Hour),
		})
		if err != nil {
			fail(err)
		}
		fmt.Println(p.ID)
	}
	fmt.Println("ready")
	select {}
}

// wait creates a decision and waits for another process to make it.
func wait(ctx context.Context, s store.Store) {
	args := warden.MustParseArgs(`{"env":"prod"}`)
	p, err := s.CreatePending(ctx, store.Pending{
		Kind: warden.KindAsk, Question: "Deploy?", Tool: "deploy", Args: args.AppendJSON(nil),
		Digest: args.Digest(), Expires: time.Now().Add(5 * time.Minute),
	})
	if err != nil {
		fail(err)
	}
	fmt.Println("waiting " + p.ID)
	ctx, cancel := context.WithTimeout(ctx, 60*time.Second)
	defer cancel()
	d, err := s.WaitDecision(ctx, p.ID)
	woke := time.Now()
	if err != nil {
		fail(err)
	}
	b, _ := json.Marshal(map[string]any{"id": d.ID, "state": d.State, "by": d.DecidedBy, "woke_unix_ns": woke.UnixNano()})
	fmt.Println(string(b))
	if err := s.Close(); err != nil {
		fail(err)
	}
}
