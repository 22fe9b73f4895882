// A child's standard error, logged line by line.

package upstream

import (
	"bytes"
	"context"
	"log/slog"
	"os/exec"
	"strings"
	"time"
)

// stderrLines forwards a child's stderr to the logger line by line: lines longer
// than maxStderrLine are cut, and at most stderrLinesPerSecond lines a second are
// logged (the number dropped is logged when the next second starts).
type stderrLines struct {
	log *slog.Logger
	// cmd.Process is set by Start before the goroutine that calls Write starts.
	cmd *exec.Cmd

	// Used only by the exec package's copying goroutine.
	buf         []byte
	cut         bool
	windowStart time.Time
	inWindow    int
	dropped     int
}

func (w *stderrLines) Write(p []byte) (int, error) {
	n := len(p)
	for len(p) > 0 {
		i := bytes.IndexByte(p, '\n')
		chunk := p
		if i >= 0 {
			chunk = p[:i]
		}
		if room := maxStderrLine - len(w.buf); len(chunk) > room {
			chunk, w.cut = chunk[:max(room, 0)], true
		}
		w.buf = append(w.buf, chunk...)
		if i < 0 {
			break
		}
		w.emit()
		p = p[i+1:]
	}
	return n, nil
}

func (w *stderrLines) emit() {
	line := strings.TrimRight(string(w.buf), "\r")
	cut := w.cut
	w.buf, w.cut = w.buf[:0], false
	now := time.Now()
	if now.Sub(w.windowStart) >= time.Second {
		if w.dropped > 0 {
			w.log.Warn("upstream stderr lines dropped", slog.Int("pid", w.cmd.Process.Pid), slog.Int("lines", w.dropped))
		}
		w.windowStart, w.inWindow, w.dropped = now, 0, 0
	}
	if w.inWindow >= stderrLinesPerSecond {
		w.dropped++
		return
	}
	w.inWindow++
	attrs := []slog.Attr{slog.Int("pid", w.cmd.Process.Pid), slog.String("line", line)}
	if cut {
		attrs = append(attrs, slog.Bool("truncated", true))
	}
	w.log.LogAttrs(context.Background(), slog.LevelInfo, "upstream stderr", attrs...)
}
