//go:build linux

package gateway_test

import (
	"context"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// Found by an attack (finding A4-1), and fixed: Close(ctx) with a context that has
// ended returned at once and left the upstream servers to stop in the background.
// `warden serve` exits right after Close (its shutdown context is 30 s, spent when a
// call hangs), so a server that does not exit promptly on a closed stdin survives
// its gateway's Close: the kernel's Pdeathsig ends the direct child when the process
// exits, but nothing ends the rest of its process group (a launcher's real server, a
// worker it forked). Before the refactor Shutdown stopped every server, group and
// all, before returning, whatever its context. Here the server is a shell wrapper
// that ignores SIGTERM, starts a helper and, once the real server has exited, waits;
// Close is given a context that has already ended. When Close returns, the helper
// must be dead or dying (SIGKILL sent).
func TestAttack4CloseWithAnEndedContextLeavesTheServersGroupRunning(t *testing.T) {
	bin := t.TempDir()
	pidFile := filepath.Join(t.TempDir(), "helper.pid")
	script := "#!/bin/sh\ntrap '' TERM\nsleep 300 </dev/null >/dev/null 2>&1 &\necho $! > " + pidFile +
		"\nfaultserver -mode ok\nsleep 300 </dev/null >/dev/null 2>&1\n"
	if err := os.WriteFile(filepath.Join(bin, "stubborn"), []byte(script), 0o755); err != nil {
		t.Fatal(err)
	}
	t.Setenv("PATH", bin+string(os.PathListSeparator)+os.Getenv("PATH"))
	e := gwStart(t, gwSetup{
		transport: "transport:\n  allow_commands: true\n  commands: [stubborn]\n",
		servers:   "servers:\n  w:\n    command: stubborn\n",
	})
	if err := e.gw.Ready(); err != nil {
		t.Fatalf("Ready: %v", err)
	}
	data, err := os.ReadFile(pidFile)
	if err != nil {
		t.Fatal(err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(data)))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = syscall.Kill(pid, syscall.SIGKILL) })
	ended, cancel := context.WithCancel(context.Background())
	cancel()
	if err := e.gw.Close(ended); err == nil {
		t.Log("Close with an ended context returned no error")
	}
	if alive, status := running(pid); alive {
		t.Errorf("Close(ended ctx) returned while the server's helper (pid %d) still runs with no SIGKILL pending; `warden serve` exits here and leaves it behind:\n%s", pid, status)
	}
}

// running reports whether pid is a live process with no SIGKILL pending (gone, a
// zombie or a process being killed is not running).
func running(pid int) (bool, string) {
	if stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat"); err == nil {
		// After the command name (in parentheses): state, then six fields, then flags.
		if i := strings.LastIndexByte(string(stat), ')'); i >= 0 {
			fields := strings.Fields(string(stat[i+1:]))
			const pfExiting, pfSignaled = 0x4, 0x400
			if len(fields) > 7 {
				if flags, err := strconv.ParseUint(fields[7], 10, 64); err == nil && flags&(pfExiting|pfSignaled) != 0 {
					return false, string(stat) // taking the signal: exiting
				}
			}
		}
	}
	data, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/status")
	if err != nil {
		return false, ""
	}
	status := string(data)
	for line := range strings.SplitSeq(status, "\n") {
		key, val, ok := strings.Cut(line, ":")
		if !ok {
			continue
		}
		val = strings.TrimSpace(val)
		switch key {
		case "State":
			if strings.HasPrefix(val, "Z") || strings.HasPrefix(val, "X") {
				return false, status
			}
		case "SigPnd", "ShdPnd":
			if mask, err := strconv.ParseUint(val, 16, 64); err == nil && mask&(1<<(uint(syscall.SIGKILL)-1)) != 0 {
				return false, status
			}
		}
	}
	return true, status
}
