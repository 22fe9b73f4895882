package upstream

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/wardenhq/warden/internal/mcptest"
)

// TestDieWithGateway kills a stand-in gateway with SIGKILL and checks that the kernel
// also kills the server it started, even one that would never notice its stdin close.
func TestDieWithGateway(t *testing.T) {
	if os.Getenv("WARDEN_TEST_DIE_PARENT") == "1" {
		// The stand-in gateway: start a child that ignores its stdin, say its pid, and
		// stay alive until killed: it blocks reading its stdin, which the test holds
		// open (and which closes should the test itself die, so nothing is left).
		child := exec.Command("sleep", "300")
		dieWithGateway(child)
		if err := child.Start(); err != nil {
			fmt.Println("error", err)
			os.Exit(1)
		}
		fmt.Println(child.Process.Pid)
		_, _ = io.Copy(io.Discard, os.Stdin)
		return
	}
	parent := exec.Command(os.Args[0], "-test.run=^TestDieWithGateway$")
	parent.Env = append(os.Environ(), "WARDEN_TEST_DIE_PARENT=1")
	out, err := parent.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	hold, err := parent.StdinPipe() // the stand-in gateway lives while this is open
	if err != nil {
		t.Fatal(err)
	}
	defer hold.Close()
	if err := parent.Start(); err != nil {
		t.Fatal(err)
	}
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		parent.Process.Kill()
		t.Fatalf("reading the child's pid: %v", err)
	}
	pid, err := strconv.Atoi(strings.TrimSpace(line))
	if err != nil {
		parent.Process.Kill()
		t.Fatalf("the stand-in gateway said %q", line)
	}
	if !alive(pid) {
		t.Fatalf("child %d is not running before the kill", pid)
	}
	parent.Process.Kill()
	parent.Wait()
	t.Cleanup(func() { // a child that outlived the test is not left behind
		if alive(pid) {
			exec.Command("kill", "-9", strconv.Itoa(pid)).Run()
		}
	})
	mcptest.WaitFor(t, 10*time.Second, fmt.Sprintf("child %d ends with its killed parent", pid), func() bool { return !alive(pid) })
}

// alive reports whether pid is a running process (a zombie, dead but not yet reaped,
// is not).
func alive(pid int) bool {
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	// The state follows the parenthesised command name.
	i := strings.LastIndexByte(string(stat), ')')
	return i >= 0 && i+2 < len(stat) && stat[i+2] != 'Z'
}
