package main

import (
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/debug"
	"syscall"
	"time"
)

// process is what only the warden process itself may change: the runtime's GC
// setting and signal handling; and the clock. main makes the one with effects (osProcess); commands
// run in-process by tests get a zero process, whose methods change nothing, so a test
// never installs a signal handler or tunes the GC of the test binary.
type process struct {
	// live is true for the process main runs.
	live bool
	// now, when set, is the clock the approvals and audit commands judge ages, expiry
	// and --since by (a test's fixed time); nil is the wall clock.
	now func() time.Time
}

// clock is the clock the store commands judge time by.
func (p *process) clock() func() time.Time {
	if p.now != nil {
		return p.now
	}
	return time.Now
}

// osProcess is the process main runs.
func osProcess() *process { return &process{live: true} }

// tuneForServe trades memory for fewer collections while the gateway serves: the MCP
// SDK allocates heavily per call. $GOGC, when set, wins.
func (p *process) tuneForServe() {
	if p.live && os.Getenv("GOGC") == "" {
		debug.SetGCPercent(400)
	}
}

// reloads delivers SIGHUP (its default action would end the process) until stop is
// called. A zero process delivers nothing.
func (p *process) reloads() (hup <-chan os.Signal, stop func()) {
	if !p.live {
		return nil, func() {}
	}
	c := make(chan os.Signal, 1)
	signal.Notify(c, syscall.SIGHUP)
	return c, func() { signal.Stop(c) }
}

// shuttingDown makes a second SIGINT or SIGTERM end the process at once: main's
// NotifyContext caught the first to start an orderly shutdown.
func (p *process) shuttingDown() {
	if p.live {
		signal.Reset(os.Interrupt, syscall.SIGTERM)
	}
}

// goRunEnded is closed when the go command that started this process (`go run
// ./cmd/warden ...`) has ended and the process was handed to another parent: go run
// does not pass a SIGTERM sent to it on, so without this `kill PID` of the README's
// main command would leave the gateway (its port and its upstreams) running. It is nil,
// and never closed, when the parent is not a go command (its executable is named go,
// read from /proc: Linux only) or the process is a test's.
func (p *process) goRunEnded() <-chan struct{} {
	if !p.live {
		return nil
	}
	ppid := os.Getppid()
	exe, err := os.Readlink(fmt.Sprintf("/proc/%d/exe", ppid))
	if err != nil || filepath.Base(exe) != "go" {
		return nil
	}
	c := make(chan struct{})
	go func() {
		for os.Getppid() == ppid {
			time.Sleep(250 * time.Millisecond) // polling the parent: there is no event for it
		}
		close(c)
	}()
	return c
}
