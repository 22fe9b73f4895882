//go:build linux

package upstream_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/upstream"
)

// Found by an attack, and fixed (each server gets a process group, ended with it): an
// upstream server was started without a process group of its own, and
// Close (like the kernel's Pdeathsig when the process dies) ends only the direct
// child. A server that runs helpers of its own (a launcher such as npx or a shell
// wrapper starting the real server, or a server that forks a worker) leaves them
// running after Tools.Close, so after `warden run` ends. Here the admitted command is
// a wrapper that starts one background helper and then execs the fault server; after
// Close the helper is still alive.
func TestAttack2CloseLeavesTheServersChildrenRunning(t *testing.T) {
	faultOnPATH(t)
	// The helper outlives its parent's exec'd server: make this process the
	// subreaper of its descendants, so that the helper, once orphaned, is our child
	// and its end can be waited for (observed, not slept on).
	if _, _, errno := syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 1, 0); errno != 0 {
		t.Fatalf("prctl(PR_SET_CHILD_SUBREAPER): %v", errno)
	}
	t.Cleanup(func() { syscall.RawSyscall(syscall.SYS_PRCTL, prSetChildSubreaper, 0, 0) })
	bin := t.TempDir()
	pidFile := filepath.Join(t.TempDir(), "helper.pid")
	script := "#!/bin/sh\nsleep 300 </dev/null >/dev/null 2>&1 &\necho $! > " + pidFile + "\nexec faultserver -mode ok\n"
	if err := os.WriteFile(filepath.Join(bin, "wrapped"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	reg := &warden.Registry{}
	tools, err := upstream.RegisterTools(context.Background(), reg, upstream.ToolsConfig{
		Servers:   []upstream.ServerConfig{{Name: "w", Command: "wrapped"}},
		Transport: upstream.TransportPolicy{AllowCommands: true, Commands: []string{"wrapped"}},
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if len(tools.Names()) == 0 {
		t.Fatalf("no tools: %v", tools.Problems())
	}
	if err := tools.Close(context.Background()); err != nil {
		t.Fatalf("Close: %v", err)
	}
	data, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		t.Fatal(err)
	}
	ended := make(chan error, 1)
	go func() {
		var ws syscall.WaitStatus
		_, err := syscall.Wait4(pid, &ws, 0, nil)
		ended <- err
	}()
	select {
	case err := <-ended:
		if err != nil {
			t.Fatalf("waiting for the helper (pid %d): %v", pid, err)
		}
	case <-time.After(30 * time.Second):
		// The helper sleeps 300 s: had Close ended it, it would be gone long ago.
		stat, _ := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		t.Errorf("the server's helper (pid %d) still runs 30 s after Close: %s", pid, stat)
		_ = syscall.Kill(pid, syscall.SIGKILL)
	}
}

// prSetChildSubreaper is prctl's PR_SET_CHILD_SUBREAPER.
const prSetChildSubreaper = 36
