#!/usr/bin/env bash
# Reproduces the gateway's overhead figures on this machine:
#
#   1. the side-by-side table: one MCP echo tool called directly over stdio, and
#      through the bare go-sdk proxy, the npm mcp-proxy, warden's gateway with its
#      audit log in SQLite (the default, synchronous=FULL) and in PostgreSQL, and the
#      gateway with the audit off (a benchmark-only configuration); p50 of sequential
#      calls and throughput of 8 concurrent callers, each as a ratio to direct stdio
#      and absolute (gateway/bench_test.go, TestGatewayOverhead);
#   2. audited calls per second with 16 callers in each store, against the targets
#      (BenchmarkAuditedCalls in store/sqlite, store/postgres and audit);
#   3. the physical floor: one data sync, one proxy hop, one start of a Go program.
#
# Usage, from anywhere in a clone:
#
#   bash scripts/bench-gateway.sh            # full length (several minutes)
#   bash scripts/bench-gateway.sh --quick    # small counts, to check it runs
#
# Needs Go. Optional: Node.js >= 20 with npm (the mcp-proxy row: mcp-proxy is
# installed once, pinned, without install scripts, into $WARDEN_BENCH_CACHE, by
# default ~/.cache/warden-bench; or set WARDEN_BENCH_MCP_PROXY to its program), and
# WARDEN_TEST_POSTGRES_DSN (the PostgreSQL rows; each run uses a fresh schema and
# drops it). A row that cannot run says why.
#
# Counts (environment, each with the default of the mode):
#   WARDEN_BENCH_ROUNDS   rounds of the table                        7  (quick 2)
#   WARDEN_BENCH_SEQ      sequential calls per path and round        500 (quick 100)
#   WARDEN_BENCH_SLICE    concurrent calling per path and round      2s (quick 300ms)
#   WARDEN_BENCH_FSYNCS   data syncs of the floor                    2000 (quick 200)
#   WARDEN_BENCH_STARTS   starts of a Go program of the floor        50 (quick 10)
#   WARDEN_BENCH_AUDIT_BENCHTIME  -benchtime of BenchmarkAuditedCalls  20000x (quick 2000x)
#   WARDEN_BENCH_STRICT=1 fails the table's test when the gateway misses its targets
set -euo pipefail

MCP_PROXY_VERSION=6.7.19 # the npm mcp-proxy the row measures
SQLITE_TARGET=25000       # audited calls/s with 16 callers
POSTGRES_TARGET=10000

quick=0
for arg in "$@"; do
  case $arg in
    --quick) quick=1 ;;
    -h | --help)
      sed -n '2,/^set -euo/p' "$0" | sed '$d; s/^# \{0,1\}//'
      exit 0
      ;;
    *)
      echo "bench-gateway.sh: unknown argument $arg (known: --quick, --help)" >&2
      exit 2
      ;;
  esac
done

cd "$(dirname "$0")/.."
if ! grep -q '^module github.com/wardenhq/warden$' go.mod 2>/dev/null; then
  echo "bench-gateway.sh: $(pwd) is not the root of the warden module; run the script from a clone" >&2
  exit 1
fi

if [ $quick = 1 ]; then
  d_rounds=2 d_seq=100 d_slice=300ms d_fsyncs=200 d_starts=10 d_audit=2000x
else
  d_rounds=7 d_seq=500 d_slice=2s d_fsyncs=2000 d_starts=50 d_audit=20000x
fi
export WARDEN_BENCH_ROUNDS="${WARDEN_BENCH_ROUNDS:-$d_rounds}"
export WARDEN_BENCH_SEQ="${WARDEN_BENCH_SEQ:-$d_seq}"
export WARDEN_BENCH_SLICE="${WARDEN_BENCH_SLICE:-$d_slice}"
export WARDEN_BENCH_FSYNCS="${WARDEN_BENCH_FSYNCS:-$d_fsyncs}"
export WARDEN_BENCH_STARTS="${WARDEN_BENCH_STARTS:-$d_starts}"
audit_benchtime="${WARDEN_BENCH_AUDIT_BENCHTIME:-$d_audit}"

work=$(mktemp -d "${TMPDIR:-/tmp}/warden-bench.XXXXXX")

# --- the npm mcp-proxy, installed only when missing --------------------------------
# install_mcp_proxy prints the path of mcp-proxy's program, installing the pinned
# version when the cache lacks it; or prints why not and fails.
install_mcp_proxy() {
  if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
    echo "no node/npm on PATH"
    return 1
  fi
  local major
  major=$(node -p 'process.versions.node.split(".")[0]')
  if [ "$major" -lt 20 ]; then
    echo "node $(node --version) is older than 20"
    return 1
  fi
  local cache="${WARDEN_BENCH_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/warden-bench}"
  local prefix="$cache/mcp-proxy-$MCP_PROXY_VERSION"
  local pkg="$prefix/node_modules/mcp-proxy"
  local have=""
  [ -f "$pkg/package.json" ] && have=$(node -p "require('$pkg/package.json').version")
  if [ "$have" != "$MCP_PROXY_VERSION" ]; then
    echo "installing mcp-proxy@$MCP_PROXY_VERSION from npm into $prefix (no install scripts)" >&2
    mkdir -p "$prefix"
    if ! npm install --prefix "$prefix" --ignore-scripts --no-audit --no-fund --loglevel=error \
      "mcp-proxy@$MCP_PROXY_VERSION" >"$work/npm.log" 2>&1; then
      echo "npm install mcp-proxy@$MCP_PROXY_VERSION failed (see $work/npm.log)"
      return 1
    fi
  fi
  local bin
  bin=$(node -p "const b = require('$pkg/package.json').bin; typeof b === 'string' ? b : b['mcp-proxy']")
  if [ ! -f "$pkg/$bin" ]; then
    echo "mcp-proxy's program $pkg/$bin is missing"
    return 1
  fi
  echo "$pkg/$bin"
}

if [ -z "${WARDEN_BENCH_MCP_PROXY:-}" ]; then
  if out=$(install_mcp_proxy); then
    export WARDEN_BENCH_MCP_PROXY="$out"
  else
    echo "bench-gateway.sh: no mcp-proxy row: $out" >&2
  fi
fi
[ -n "${WARDEN_TEST_POSTGRES_DSN:-}" ] ||
  echo "bench-gateway.sh: WARDEN_TEST_POSTGRES_DSN is not set: no PostgreSQL rows" >&2

# --- 1 and 3: the table and the floor -----------------------------------------------
table_cmd=(go test -count=1 -run '^TestGatewayOverhead$' -timeout 60m -v ./gateway)
table_show="go test -count=1 -run '^TestGatewayOverhead\$' -timeout 60m -v ./gateway"
echo "== gateway overhead: WARDEN_BENCH=1 $table_show (rounds $WARDEN_BENCH_ROUNDS, seq $WARDEN_BENCH_SEQ, slice $WARDEN_BENCH_SLICE)" >&2
if ! WARDEN_BENCH=1 WARDEN_BENCH_TABLE="$work/table.md" "${table_cmd[@]}" >"$work/overhead.log" 2>&1; then
  cat "$work/overhead.log" >&2
  echo "bench-gateway.sh: the overhead test failed (log above, kept in $work/overhead.log)" >&2
  exit 1
fi

# --- 2: audited calls/s with 16 callers ----------------------------------------------
audit_cmd=(go test -count=1 -run '^$' -bench '^BenchmarkAuditedCalls$' -benchtime "$audit_benchtime" ./store/sqlite ./store/postgres ./audit)
audit_show="go test -count=1 -run '^\$' -bench '^BenchmarkAuditedCalls\$' -benchtime $audit_benchtime ./store/sqlite ./store/postgres ./audit"
echo "== audited calls: $audit_show" >&2
if ! "${audit_cmd[@]}" >"$work/audit.log" 2>&1; then
  cat "$work/audit.log" >&2
  echo "bench-gateway.sh: BenchmarkAuditedCalls failed (log above, kept in $work/audit.log)" >&2
  exit 1
fi

echo
echo "# Gateway at the physical floor ($(date -u '+%Y-%m-%d %H:%M UTC'), $(go env GOOS)/$(go env GOARCH), $(nproc 2>/dev/null || echo '?') CPUs, $(go env GOVERSION))"
echo
cat "$work/table.md"
echo
echo "Audited calls with 16 concurrent callers:"
echo
echo "| benchmark | calls/s | p50 | target |"
echo "|---|---|---|---|"
awk -v sq="$SQLITE_TARGET" -v pg="$POSTGRES_TARGET" '
  /^pkg: / { pkg = $2; sub(/.*\/warden\//, "", pkg) }
  /^BenchmarkAuditedCalls/ {
    name = $1; sub(/^BenchmarkAuditedCalls\/?/, "", name); sub(/-[0-9]+$/, "", name)
    label = pkg (name == "" ? "" : " " name)
    rate = ""; p50 = ""
    for (i = 2; i < NF; i++) {
      if ($(i+1) == "calls/s") rate = $i
      if ($(i+1) == "p50-ms") p50 = $i " ms"
      if ($(i+1) == "p50-ns") p50 = sprintf("%.3f ms", $i / 1e6)
    }
    # The targets are for 16 callers with the gateway's commit scheme (end=later:
    # only the intent synchronous) at the default durability.
    target = ""; why = ""
    if (label ~ /sync=normal/) why = "none (not the default durability)"
    else if (label ~ /end=sync/) why = "none (every entry synchronous, not the gateway's scheme)"
    else if (label ~ /callers=1$/) why = "none (one caller)"
    else if (label ~ /postgres/) target = pg
    else target = sq
    verdict = target == "" ? why : \
      (rate + 0 >= target ? ">= " target ": met" : ">= " target ": MISSED")
    printf "| %s | %.0f | %s | %s |\n", label, rate, p50, verdict
    if (label ~ /^store\/postgres/) pg_store++
    if (label ~ /^audit postgres/) pg_audit++
  }
  END {
    if (!pg_store) print "| store/postgres | skipped: WARDEN_TEST_POSTGRES_DSN is not set | | |"
    if (!pg_audit) print "| audit postgres | skipped: WARDEN_TEST_POSTGRES_DSN is not set | | |"
  }
' "$work/audit.log"
echo
echo "Commands (from the module root):"
echo
echo "    WARDEN_BENCH=1 WARDEN_BENCH_ROUNDS=$WARDEN_BENCH_ROUNDS WARDEN_BENCH_SEQ=$WARDEN_BENCH_SEQ WARDEN_BENCH_SLICE=$WARDEN_BENCH_SLICE WARDEN_BENCH_FSYNCS=$WARDEN_BENCH_FSYNCS WARDEN_BENCH_STARTS=$WARDEN_BENCH_STARTS $table_show"
echo "    $audit_show"
echo "    go test -run '^\$' -bench 'Direct|Gateway|DataSync|GoStart' -benchtime 2000x ./gateway   # the same paths as go benchmarks"
if [ -n "${WARDEN_BENCH_MCP_PROXY:-}" ]; then
  echo "    (with WARDEN_BENCH_MCP_PROXY=$WARDEN_BENCH_MCP_PROXY for the mcp-proxy row)"
fi
echo
echo "Logs: $work"
