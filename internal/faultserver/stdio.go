package main

import (
	"fmt"
	"io"
	"os"
	"syscall"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

// stdioTransport returns the transport the server runs on: its stdin and stdout.
//
// By default stdin is switched to non-blocking mode and read through the runtime's
// poller, so that no thread of this process ever sits in a read(2) of stdin. With
// blocking (-blocking-stdin) it is mcp.StdioTransport, which reads os.Stdin with
// blocking reads: under Go 1.26 a goroutine that enters such a read just as
// another goroutine starts a stop-the-world (a GC start) can hold its P until the
// read returns, so the whole process stops until the client next writes to it.
// That is the "lost answer" of issue 17; internal/repro/stwsyscall reproduces it
// without MCP.
//
// Only this process reads its stdin (the gateway gives every child a pipe of its
// own), so the mode change affects no one else.
func stdioTransport(blocking bool) (mcp.Transport, error) {
	if blocking {
		return &mcp.StdioTransport{}, nil
	}
	if err := syscall.SetNonblock(0, true); err != nil {
		return nil, fmt.Errorf("making stdin non-blocking: %w (run with -blocking-stdin to read it as it is)", err)
	}
	// A File made from a non-blocking descriptor is read through the poller;
	// os.Stdin, made at start from a blocking one, is not.
	stdin := os.NewFile(0, "stdin")
	return &mcp.IOTransport{Reader: stdin, Writer: nopClose{os.Stdout}}, nil
}

// nopClose leaves stdout open when the connection closes, as mcp.StdioTransport
// does: the log may still be written after.
type nopClose struct{ io.Writer }

func (nopClose) Close() error { return nil }
