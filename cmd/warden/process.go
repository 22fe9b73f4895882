package main

import (
	"os"
	"os/signal"
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
