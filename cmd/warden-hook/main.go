// Command warden-hook is Warden as Claude Code's PreToolUse (and PostToolUse) hook, in
// a binary that links only what the hook needs, so that it starts in a few
// milliseconds: Claude Code runs it before every tool call.
//
//	warden-hook claude-code --policy FILE [--role R] [--store DSN] [--event pre|post] [--policy-in-project]
//	warden-hook claude-code install [--settings PATH] [--policy FILE] [--store DSN] [--warden-hook PATH] [--write]
//
// It is `warden hook` (package hook/cli holds the one implementation both run): the
// same flags, the same answers on stdout, the same messages on stderr, the same exit
// codes. `warden hook claude-code install` writes hooks that run the warden-hook
// beside the warden executable; build it there with
//
//	go build -o "$(dirname "$(command -v warden)")/warden-hook" ./cmd/warden-hook
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"

	"github.com/wardenhq/warden/hook/cli"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := cli.Main(ctx, os.Args[1:], os.Stdin, os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
