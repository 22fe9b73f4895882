package warden_test

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/wardenhq/warden"
)

// A tool whose Run says it did nothing (an error wrapping ErrNotExecuted) ends failed
// and not executed, in the outcome and in the tool.end event; any other failure of a
// tool that ran stays executed.
func TestRunNotExecuted(t *testing.T) {
	for _, c := range []struct {
		name     string
		err      error
		executed bool
	}{
		{"not executed", fmt.Errorf("no connection: %w", warden.ErrNotExecuted), false},
		{"failed while running", errors.New("the connection broke mid-call"), true},
	} {
		t.Run(c.name, func(t *testing.T) {
			rec := &warden.Recorder{}
			tool := warden.Executable{Tool: warden.Tool{Name: "t"}, Run: func(context.Context, warden.Args, *warden.Credential) (any, error) {
				return nil, c.err
			}}
			g := mustBind(t, warden.Config{Ungoverned: true, Sinks: []warden.Sink{rec}}, tool)
			out := call(t, g, "t", `{}`)
			if out.Executed != c.executed || out.Status != warden.StatusFailed || out.Stage != warden.StageExecute || !out.IsError {
				t.Errorf("outcome: executed=%t status=%s stage=%s isError=%t; want executed=%t, failed", out.Executed, out.Status, out.Stage, out.IsError, c.executed)
			}
			if !errors.Is(out.Err, c.err) {
				t.Errorf("Outcome.Err = %v, want %v", out.Err, c.err)
			}
			ends := rec.Named(warden.EventToolEnd)
			if len(ends) != 1 || ends[0].Executed != c.executed {
				t.Errorf("tool.end events: %+v", ends)
			}
		})
	}
}
