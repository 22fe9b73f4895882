// Command warden is the command-line interface of Warden, fail-closed governance for
// AI-agent tool calls.
//
//	warden check --policy FILE --tool NAME [--args JSON] [--role R] [--capability CAP]... [--json] [--explain]
//	warden test FILE...
//	warden validate FILE...
//
// Exit codes: 0 allow (or success), 1 internal error or failing tests, 2 bad usage or a
// bad policy or test file, 3 deny, 4 ask, 5 halt.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
