package storetest

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/store"
)

// The helper process is the test binary itself, started with these variables set.
const (
	envHelper = "WARDEN_STORETEST_HELPER" // what the helper does
	envDSN    = "WARDEN_STORETEST_DSN"    // the store it opens
	envID     = "WARDEN_STORETEST_ID"     // the decision it decides
)

// HelperProcess turns the test binary into a helper of [RunProcesses] when it was
// started as one, and returns otherwise. Call it first in TestMain:
//
//	func TestMain(m *testing.M) {
//		storetest.HelperProcess()
//		os.Exit(m.Run())
//	}
func HelperProcess() {
	op := os.Getenv(envHelper)
	if op == "" {
		return
	}
	if err := helper(op); err != nil {
		fmt.Fprintln(os.Stderr, "storetest helper:", err)
		os.Exit(1)
	}
	os.Exit(0)
}

func helper(op string) error {
	ctx := context.Background()
	s, err := store.Open(ctx, os.Getenv(envDSN))
	if err != nil {
		return err
	}
	// No Close for the ops that wait to be killed: a crash does not close either.
	switch op {
	case "begin":
		ref, err := s.BeginCall(ctx, store.CallRecord{CallID: "crash-1", Tool: "deploy", Executed: true, Stage: warden.StageExecute})
		if err != nil {
			return err
		}
		fmt.Printf("seq %d\n", ref.Seq)
		blockUntilKilled() // "running the tool"
	case "pending":
		p, err := s.CreatePending(ctx, samplePending())
		if err != nil {
			return err
		}
		fmt.Printf("id %s\n", p.ID)
		blockUntilKilled() // waiting for a person
	case "decide":
		if _, err := s.Decide(ctx, os.Getenv(envID), store.Verdict{Approve: true, By: "process-b"}); err != nil {
			return err
		}
		fmt.Println("decided")
		return s.Close()
	}
	return fmt.Errorf("unknown helper op %q", op)
}

// blockUntilKilled blocks the helper until the test kills it: it reads its stdin, which
// the test keeps open (see startHelper), so the read ends only with the process. Should
// the test end without killing it, the pipe closes and the helper exits.
func blockUntilKilled() {
	_, _ = io.Copy(io.Discard, os.Stdin)
}

// startHelper starts the test binary as a helper doing op on dsn and returns it with
// the first line it printed.
func startHelper(t *testing.T, op, dsn string, env ...string) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), envHelper+"="+op, envDSN+"="+dsn)
	cmd.Env = append(cmd.Env, env...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	// Kept open while the helper lives: a helper that must wait to be killed blocks
	// reading it.
	stdin, err := cmd.StdinPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		cmd.Process.Kill()
		cmd.Wait()
		stdin.Close()
	})
	line := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(out)
		sc.Scan()
		line <- sc.Text()
	}()
	select {
	case l := <-line:
		if l == "" {
			t.Fatalf("helper %s printed nothing (did TestMain call storetest.HelperProcess?)", op)
		}
		return cmd, l
	case <-time.After(30 * time.Second):
		t.Fatalf("helper %s did not answer", op)
	}
	return nil, ""
}

// kill9 kills the helper with SIGKILL: no deferred function, no Close, runs.
func kill9(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	if err := cmd.Process.Kill(); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	if code := cmd.ProcessState.ExitCode(); code != -1 {
		t.Fatalf("the helper exited (code %d) before it was killed", code)
	}
}

// RunProcesses runs the cases that need real OS processes sharing a store: a process
// killed (SIGKILL) between a call's intent and its completion, a process killed with
// pending decisions, and a decision made by one process waking a waiter in another.
// newDSN must return the DSN of a new, empty database each time; open opens the store
// of this process (the helper processes use [store.Open], so the implementation must be
// registered). The test binary must call [HelperProcess] from TestMain.
func RunProcesses(t *testing.T, newDSN func(t *testing.T) string, open Opener) {
	t.Run("Processes/KilledAfterIntent", func(t *testing.T) {
		dsn := newDSN(t)
		cmd, line := startHelper(t, "begin", dsn)
		seq, err := strconv.ParseInt(strings.TrimPrefix(line, "seq "), 10, 64)
		if err != nil {
			t.Fatalf("helper printed %q", line)
		}
		kill9(t, cmd)
		s := open(t, dsn, time.Now)
		recs := query(t, s, store.CallFilter{})
		if len(recs) != 1 {
			t.Fatalf("after the crash: %d records, want the started call", len(recs))
		}
		if r := recs[0]; r.Seq != seq || r.CallID != "crash-1" || r.Status != store.StatusStarted || !r.Unknown || !r.Executed {
			t.Errorf("after the crash the call reads %+v, want started, outcome unknown", r)
		}
		mustVerifyOK(t, s, 1)
		check(t, s.RecordCall(ctxFor(t), store.CallRecord{Tool: "after-restart", Status: warden.StatusRefused}))
		mustVerifyOK(t, s, 2)
	})

	t.Run("Processes/KilledWithPending", func(t *testing.T) {
		dsn := newDSN(t)
		cmd, line := startHelper(t, "pending", dsn)
		id := strings.TrimPrefix(line, "id ")
		kill9(t, cmd)
		s := open(t, dsn, time.Now)
		p, err := s.GetPending(ctxFor(t), id)
		check(t, err)
		if p.State != store.StatePending {
			t.Fatalf("after the crash the decision is %q, want pending", p.State)
		}
		l, err := s.ListPending(ctxFor(t), store.PendingFilter{})
		check(t, err)
		if len(l) != 1 || l[0].ID != id {
			t.Errorf("ListPending after the crash = %v", l)
		}
		d := approve(t, s, id, store.Verdict{By: "bob"})
		if _, ok := consume(t, s, d.Digest, d.Session); !ok {
			t.Error("the approval of a decision that survived a crash does not authorize its call")
		}
	})

	t.Run("Processes/DecisionWakesOtherProcess", func(t *testing.T) {
		dsn := newDSN(t)
		clk := &clock{}
		s := open(t, dsn, clk.Now)
		p := newPending(t, s, samplePending())
		lag := waitWhile(t, s, clk, p.ID, func() {
			startHelper(t, "decide", dsn, envID+"="+p.ID)
		}, "process-b")
		if lag > 1500*time.Millisecond {
			t.Errorf("the waiter woke %v after the other process decided, want within about a second", lag)
		}
	})
}
