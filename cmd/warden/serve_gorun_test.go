package main

import (
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	goruntime "runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/wardenhq/warden/inbox"
	"github.com/wardenhq/warden/internal/mcptest"
)

// TestServeGoRunStoppedByPID: the README's main command is `go run ./cmd/warden
// serve ...`. go run does not pass a SIGTERM sent to its PID on to warden; warden sees
// the go command end and shuts down as on SIGTERM, so `kill PID` leaves no gateway
// (and no listening port) behind.
func TestServeGoRunStoppedByPID(t *testing.T) {
	if goruntime.GOOS != "linux" {
		t.Skip("warden finds its go run parent through /proc")
	}
	if testing.Short() {
		t.Skip("builds warden with go run")
	}
	gobin, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go is not on PATH")
	}
	dir := t.TempDir()
	cfg := filepath.Join(dir, "gateway.yaml")
	writeFile(t, filepath.Join(dir, "policy.yaml"), faultPolicy)
	writeFile(t, cfg, "policy: policy.yaml\nservers: {}\nlisten: 127.0.0.1:0\nclients:\n  - principal: a\n    token_sha256: "+inbox.HashToken(demoWriterToken)+"\n")

	logFile := filepath.Join(dir, "stderr.log")
	logOut, err := os.Create(logFile)
	if err != nil {
		t.Fatal(err)
	}
	defer logOut.Close()
	cmd := exec.Command(gobin, "run", "./cmd/warden", "serve", "-c", cfg)
	cmd.Dir = mcptest.RepoRoot(t)
	// A file, not a pipe: a pipe closed when go run ends would end warden with SIGPIPE.
	cmd.Stdout, cmd.Stderr = logOut, logOut
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	pgid := cmd.Process.Pid
	t.Cleanup(func() { syscall.Kill(-pgid, syscall.SIGKILL) })
	listening := regexp.MustCompile(`msg="warden gateway listening" mcp=(http://\S+)`)
	var url string
	// Up to 10 minutes: a cold build on a loaded machine.
	mcptest.WaitFor(t, 10*time.Minute, "the gateway listens", func() bool {
		data, _ := os.ReadFile(logFile)
		if m := listening.FindSubmatch(data); m != nil {
			url = string(m[1])
		}
		return url != ""
	})

	// SIGTERM to the go command's PID only, as `kill PID` sends it.
	if err := cmd.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatal(err)
	}
	cmd.Wait()
	// Up to 20 s: warden polls its parent every 250 ms, then shuts down.
	mcptest.WaitFor(t, 20*time.Second, fmt.Sprintf("after SIGTERM to go run's PID, the gateway at %s refuses connections and its process group %d is empty", url, pgid), func() bool {
		resp, err := http.Get(url)
		if err == nil {
			resp.Body.Close()
		}
		return err != nil && errors.Is(err, syscall.ECONNREFUSED) && groupEmpty(pgid)
	})
	data, _ := os.ReadFile(logFile)
	if !strings.Contains(string(data), "the go run that started warden has ended") {
		t.Errorf("warden did not log that its go run ended:\n%s", data)
	}
}

// groupEmpty reports whether no process of process group pgid is left.
func groupEmpty(pgid int) bool {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return false
	}
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		if g, err := syscall.Getpgid(pid); err == nil && g == pgid {
			return false
		}
	}
	return true
}
