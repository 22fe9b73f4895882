package gateway_test

// The benchmark paths that need more than the module: PostgreSQL, the npm mcp-proxy,
// and the audit-off store. See bench_test.go.

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net"
	"net/url"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"

	"github.com/wardenhq/warden/internal/mcptest"
	"github.com/wardenhq/warden/store"
	_ "github.com/wardenhq/warden/store/postgres" // registers postgres://
)

// auditOffStore is the audit-off variant's store: every audit write succeeds at once
// and records nothing; everything else (pins, approvals) is the wrapped store's. It
// exists only in this test file, so no build of the product can turn the audit off.
type auditOffStore struct {
	store.Store
	seq atomic.Int64
}

func (s *auditOffStore) BeginCall(context.Context, store.CallRecord) (store.CallRef, error) {
	return store.CallRef{Seq: s.seq.Add(1)}, nil
}

func (s *auditOffStore) EndCall(context.Context, store.CallRef, store.Completion) error { return nil }

func (s *auditOffStore) RecordCall(context.Context, store.CallRecord) error { return nil }

func (s *auditOffStore) EndCallLater(_ context.Context, _ store.CallRef, _ store.Completion, done func(error)) error {
	if done != nil {
		done(nil)
	}
	return nil
}

func (s *auditOffStore) RecordCallLater(_ context.Context, _ store.CallRecord, done func(error)) error {
	if done != nil {
		done(nil)
	}
	return nil
}

func startAuditOffGateway(tb testing.TB) *benchTarget {
	var off *auditOffStore
	bt := startGateway(tb, "gateway/auditoff", "", func(s store.Store) store.Store {
		off = &auditOffStore{Store: s}
		return off
	})
	// The gateway journals through the wrapper: the warm-up calls passed it by.
	if off.seq.Load() == 0 {
		tb.Fatal("gateway/auditoff: no call reached the audit-off store; the gateway does not journal through its Options.Store")
	}
	return bt
}

const postgresEnv = "WARDEN_TEST_POSTGRES_DSN"

func postgresUnavailable() string {
	if os.Getenv(postgresEnv) == "" {
		return postgresEnv + " is not set: no PostgreSQL row (for example postgres://postgres@127.0.0.1:5432/test?sslmode=disable)"
	}
	return ""
}

// startPostgresGateway runs the gateway with its store in a fresh schema of the
// database WARDEN_TEST_POSTGRES_DSN names, dropped when tb ends.
func startPostgresGateway(tb testing.TB) *benchTarget {
	tb.Helper()
	base := os.Getenv(postgresEnv)
	var b [6]byte
	_, _ = rand.Read(b[:])
	schema := "warden_gwbench_" + hex.EncodeToString(b[:])
	pgExec(tb, base, "CREATE SCHEMA "+schema)
	tb.Cleanup(func() { pgExec(tb, base, "DROP SCHEMA IF EXISTS "+schema+" CASCADE") })
	u, err := url.Parse(base)
	if err != nil {
		tb.Fatalf("%s: %v", postgresEnv, err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return startGateway(tb, "gateway/postgres", u.String(), nil)
}

func pgExec(tb testing.TB, dsn, sql string) {
	tb.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, dsn)
	if err != nil {
		tb.Fatalf("connecting to PostgreSQL (%s): %v", postgresEnv, err)
	}
	defer conn.Close(ctx)
	if _, err := conn.Exec(ctx, sql); err != nil {
		tb.Fatalf("%s: %v", sql, err)
	}
}

// mcpProxyEnv names the npm mcp-proxy's program: the package's bin script
// (node_modules/mcp-proxy/dist/bin/mcp-proxy.mjs, run with node) or any executable.
const mcpProxyEnv = "WARDEN_BENCH_MCP_PROXY"

// mcpProxyCommand returns the command line that runs mcp-proxy, or "" when there is
// none: WARDEN_BENCH_MCP_PROXY, else mcp-proxy on PATH.
func mcpProxyCommand() []string {
	prog := os.Getenv(mcpProxyEnv)
	if prog == "" {
		p, err := exec.LookPath("mcp-proxy")
		if err != nil {
			return nil
		}
		prog = p
	}
	if strings.HasSuffix(prog, ".mjs") || strings.HasSuffix(prog, ".js") {
		return []string{"node", prog}
	}
	return []string{prog}
}

func mcpProxyUnavailable() string {
	cmd := mcpProxyCommand()
	if cmd == nil {
		return "mcp-proxy is not installed: no mcp-proxy row (set " + mcpProxyEnv + " to its program, or run scripts/bench-gateway.sh, which installs it from npm)"
	}
	if _, err := exec.LookPath(cmd[0]); err != nil {
		return fmt.Sprintf("%s=%s: %v", mcpProxyEnv, os.Getenv(mcpProxyEnv), err)
	}
	return ""
}

// startMCPProxy runs mcp-proxy in front of one faultserver, serving streamable HTTP
// only on a free loopback port (its other options at their defaults), and connects
// benchConc sessions to it. The process is interrupted and waited for when tb ends,
// after the sessions are closed.
func startMCPProxy(tb testing.TB) *benchTarget {
	tb.Helper()
	needBenchServer(tb)
	port := freePort(tb)
	argv := append(mcpProxyCommand(), "--host", "127.0.0.1", "--port", strconv.Itoa(port), "--server", "stream", "--", "faultserver")
	ctx, cancel := context.WithCancel(context.Background())
	cmd := exec.CommandContext(ctx, argv[0], argv[1:]...)
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 10 * time.Second
	var out mcptest.LogBuffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		cancel()
		tb.Fatalf("starting %v: %v", argv, err)
	}
	exited := make(chan struct{})
	go func() {
		_ = cmd.Wait() // interrupted at the end: the exit status says nothing
		close(exited)
	}()
	tb.Cleanup(func() {
		cancel()
		<-exited
	})
	addr := net.JoinHostPort("127.0.0.1", strconv.Itoa(port))
	// Polling with a deadline: waiting on another process to listen.
	deadline := time.Now().Add(60 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			break
		}
		select {
		case <-exited:
			tb.Fatalf("mcp-proxy (%v) exited before listening on %s; its output:\n%s", argv, addr, out.String())
		case <-time.After(25 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			tb.Fatalf("mcp-proxy (%v) is not listening on %s after 60s; its output:\n%s", argv, addr, out.String())
		}
	}
	bt := &benchTarget{name: "gateway/mcpproxy", tool: "echo", sessions: connectSessions(tb, "http://"+addr+"/mcp")}
	bt.warm(tb)
	return bt
}

// freePort returns a loopback TCP port that was free a moment ago.
func freePort(tb testing.TB) int {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	defer ln.Close()
	return ln.Addr().(*net.TCPAddr).Port
}
