// Command warden is the command-line interface of Warden, fail-closed governance for
// AI-agent tool calls.
//
//	warden demo [--json] [SCENE...]
//	warden run --config agent.yaml [--resume FILE (--approve|--decline) --by NAME --note TEXT] TASK
//	warden check --policy FILE --tool NAME [--args JSON] [--role R] [--capability CAP]... [--json] [--explain]
//	warden test FILE...
//	warden validate FILE...
//	warden version | warden --version
//	warden completion bash|zsh|fish
//	warden approvals list|show|approve|decline [--store DSN]
//	warden audit [filters] [--json] | warden audit verify [--store DSN]
//	warden hook claude-code --policy FILE [--role R] [--store DSN] [--event post]
//	warden hook claude-code install [--settings PATH] [--policy FILE] [--write]
//
// Each command's help lists its exit codes. check: 0 allow, 3 deny, 4 ask, 5 halt, 2 bad
// usage or a bad policy file, 1 internal error.
package main

import (
	"context"
	"os"
	"os/signal"
	"syscall"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := runIn(ctx, osProcess(), os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}
