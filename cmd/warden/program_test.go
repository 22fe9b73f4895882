package main

import (
	"bytes"
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/wardenhq/warden/store"
)

// A program built and run directly prints and exits exactly as the command line does.
func TestCheckProgramMatchesTheCommand(t *testing.T) {
	ctx := context.Background()
	o := checkOptions{policy: safeExample, tool: "bash", args: `{"command":"rm -rf /"}`, explain: true}
	var direct bytes.Buffer
	p, err := newCheckProgram(o, &direct)
	if err != nil {
		t.Fatal(err)
	}
	code := exitCode(execute(ctx, p, nil))
	var viaCLI, stderr bytes.Buffer
	cliCode := run(ctx, []string{"check", "--policy", safeExample, "--tool", "bash", "--args", `{"command":"rm -rf /"}`, "--explain"}, &viaCLI, &stderr)
	if code != cliCode || code != exitDeny {
		t.Errorf("exit codes: program %d, command %d; want both %d", code, cliCode, exitDeny)
	}
	if direct.String() != viaCLI.String() {
		t.Errorf("program output\n%s\ndiffers from the command's\n%s", direct.String(), viaCLI.String())
	}
}

// Constructors check the flags before anything is read: a bad flag is a usage error
// even when the store or policy does not exist.
func TestProgramConstructorsRefuseBadFlags(t *testing.T) {
	missing := "sqlite://" + filepath.Join(t.TempDir(), "none.db")
	now := func() time.Time { return time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC) }
	for name, build := range map[string]func() error{
		"check args": func() error {
			_, err := newCheckProgram(checkOptions{policy: "no-such.yaml", tool: "bash", args: "[1]"}, nil)
			return err
		},
		"audit tool glob": func() error {
			_, err := newAuditProgram(auditOptions{store: missing, tool: "mcp__[ab", now: now}, false, nil)
			return err
		},
		"audit since": func() error {
			_, err := newAuditProgram(auditOptions{store: missing, since: "yesterday", now: now}, false, nil)
			return err
		},
		"approvals blank by": func() error {
			_, err := newApprovalsProgram(approvalsOptions{store: missing, by: "  ", now: now}, approvalsDecline, "apv_x", nil)
			return err
		},
		"approvals scope": func() error {
			_, err := newApprovalsProgram(approvalsOptions{store: missing, by: "ann", scope: "forever", now: now}, approvalsApprove, "apv_x", nil)
			return err
		},
		"demo scene": func() error {
			_, err := newDemoProgram(demoOptions{}, []string{"no-such-scene"}, nil)
			return err
		},
		"test files": func() error {
			_, err := newTestProgram(nil, nil, nil)
			return err
		},
		"validate files": func() error {
			_, err := newValidateProgram(nil, "", nil, nil)
			return err
		},
	} {
		if err := build(); exitCode(err) != exitUsage {
			t.Errorf("%s: got %v (exit %d), want a usage error", name, err, exitCode(err))
		}
	}
}

// A store program opens its store in Run and closes it in Close, once.
func TestStoreProgramClosesItsStore(t *testing.T) {
	ctx := context.Background()
	dsn := "sqlite://" + filepath.Join(t.TempDir(), "w.db")
	// Create the store: the audit commands refuse a file that does not exist.
	st, err := store.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	p, err := newAuditProgram(auditOptions{store: dsn, limit: defaultAuditLimit, now: time.Now}, true, &out)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Run(ctx); err != nil {
		t.Fatalf("verify: %v", err)
	}
	if p.st == nil {
		t.Fatal("Run did not keep the store it opened")
	}
	if err := p.Close(); err != nil {
		t.Fatal(err)
	}
	if p.st != nil {
		t.Error("Close left the store")
	}
	if err := p.Close(); err != nil {
		t.Errorf("a second Close: %v", err)
	}
}
