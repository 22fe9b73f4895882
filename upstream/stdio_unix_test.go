//go:build unix

package upstream

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// TestStdioCloseEscalates: a child ignoring stdin's end and SIGTERM is killed.
func TestStdioCloseEscalates(t *testing.T) {
	if _, err := exec.LookPath("sleep"); err != nil {
		t.Skip("sleep not found")
	}
	// The child says it ignores SIGTERM through a FIFO, once its trap is set: a
	// SIGTERM sent before that would end it, and the test would race the shell.
	ready := filepath.Join(t.TempDir(), "ready")
	if err := syscall.Mkfifo(ready, 0o600); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command("sh", "-c", `trap '' TERM; echo trapped > "$1"; exec sleep 300`, "sh", ready)
	conn, err := (&commandTransport{Command: cmd, TerminateDuration: 250 * time.Millisecond}).Connect(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if said, err := os.ReadFile(ready); err != nil || string(said) != "trapped\n" {
		t.Fatalf("the child's word through the FIFO: %q, %v", said, err)
	}
	start := time.Now()
	err = conn.Close()
	var ee *exec.ExitError
	if !errors.As(err, &ee) || ee.ProcessState.String() != "signal: killed" {
		t.Errorf("Close = %v, want the child killed", err)
	}
	if d := time.Since(start); d < 500*time.Millisecond {
		t.Errorf("Close took %s, want two waits of 250ms before the kill", d)
	}
}
