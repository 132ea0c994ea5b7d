#!/usr/bin/env bash
# The README's first command on a fresh machine: `bash .ci/fresh_install.sh` (called by .ci/run).
#   1. copies the working tree (no venvs, no node_modules) to a temporary folder;
#   2. runs the README's install line there, as written, in a fresh venv (no extras);
#   3. imports every module of the package there: only the agent extra's may fail, saying which extra;
#   4. starts the README's `dev` from that venv, on free ports and with its own --state-dir;
#   5. checks the start (no traceback; review_code left out with one line, the agent extra being missing),
#      lists the tools and completes a task (`search_logs`) with the bundled `call` command;
#   6. stops `dev` with Ctrl-C and checks that it ended cleanly.
# The install line is read from the README, so the two cannot drift apart. Exits non-zero if any step fails.
set -euo pipefail
repo="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"

# The run command: the first line of the README's first code block.
run_line="$(awk '/^```/ { if (open) exit; open = 1; next } open { print; exit }' "$repo/README.md")"
run_line="${run_line%%#*}"
install_line="${run_line%%&& .venv/bin/mcp-tasks-temporal dev*}"
if [[ "$install_line" == "$run_line" || "$install_line" != *"pip install"* ]]; then
  echo "fresh install: the README's first line is not '<install> && .venv/bin/mcp-tasks-temporal dev': $run_line" >&2
  exit 1
fi

work="$(mktemp -d "${TMPDIR:-/tmp}/mcp-tasks-fresh.XXXXXX")"
dev_pid=""
cleanup() {
  if [[ -n "$dev_pid" ]] && kill -0 "$dev_pid" 2>/dev/null; then
    kill -INT "$dev_pid" 2>/dev/null || true
    for _ in $(seq 60); do kill -0 "$dev_pid" 2>/dev/null || break; sleep 0.5; done
    kill -KILL "$dev_pid" 2>/dev/null || true
  fi
  rm -rf "$work"
}
trap cleanup EXIT

step() { printf 'fresh install: %s\n' "$*"; }

step "copying the working tree to $work/repo"
mkdir "$work/repo"
tar -C "$repo" --exclude=./.git --exclude=.venv --exclude=node_modules --exclude=__pycache__ \
  --exclude=./.mcp-tasks-temporal -cf - . | tar -C "$work/repo" -xf -
cd "$work/repo"

step "running the README's install line: $install_line"
# The CI's own venv is on no path here: PYTHONPATH and VIRTUAL_ENV would let the fresh venv see it.
env -u PYTHONPATH -u VIRTUAL_ENV bash -c "$install_line" >"$work/install.log" 2>&1 || {
  cat "$work/install.log"
  step "FAILED: the install line"
  exit 1
}

step "importing every module: only those of a missing extra may fail, and they must say which"
env -u PYTHONPATH .venv/bin/python - <<'PY'
import importlib, pkgutil, warnings

import mcp_tasks_temporal
from mcp_tasks_temporal.contrib import MissingExtra

warnings.simplefilter("ignore")  # the old module paths warn on import, as they should
try:
    import pydantic_ai  # noqa: F401
    agent_modules = set()
except ImportError:
    # The agent extra's own modules: the integration itself, its old path, and the demo's sub-agent.
    agent_modules = {"mcp_tasks_temporal.contrib.pydantic_ai", "mcp_tasks_temporal.agent", "mcp_tasks_temporal.demo.review"}
failed = {}
for module in pkgutil.walk_packages(mcp_tasks_temporal.__path__, "mcp_tasks_temporal."):
    if module.name.endswith("__main__"):
        continue
    try:
        importlib.import_module(module.name)
    except ImportError as error:
        failed[module.name] = error
unexpected = [
    (name, error)
    for name, error in sorted(failed.items())
    if name not in agent_modules or (name.startswith("mcp_tasks_temporal.contrib") and not isinstance(error, MissingExtra))
]
for name, error in unexpected:
    print(f"  {name}: {type(error).__name__}: {error}")
raise SystemExit(1 if unexpected else 0)
PY

free_port() { python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }
port="$(free_port)"
temporal_port="$(free_port)"
url="http://127.0.0.1:$port/mcp"
step "starting .venv/bin/mcp-tasks-temporal dev on port $port"
env -u PYTHONPATH -u VIRTUAL_ENV .venv/bin/mcp-tasks-temporal dev --port "$port" --temporal-port "$temporal_port" \
  --ui-port 0 --state-dir "$work/state" >"$work/dev.log" 2>&1 &
dev_pid=$!
for _ in $(seq 240); do
  grep -qs "Press Ctrl-C to stop." "$work/dev.log" && break
  kill -0 "$dev_pid" 2>/dev/null || break
  sleep 0.5
done
if ! grep -q "Press Ctrl-C to stop." "$work/dev.log"; then
  cat "$work/dev.log"
  step "FAILED: dev did not start"
  exit 1
fi
cat "$work/dev.log"
if grep -q "Traceback" "$work/dev.log"; then
  step "FAILED: dev started with a traceback"
  exit 1
fi
if ! env -u PYTHONPATH .venv/bin/python -c 'import pydantic_ai' 2>/dev/null; then
  # Without the agent extra the demo leaves review_code out, saying so once.
  left_out="$(grep -c 'review_code left out: needs the agent extra' "$work/dev.log" || true)"
  if [[ "$left_out" != 1 ]]; then
    step "FAILED: dev said $left_out times (not once) that review_code was left out"
    exit 1
  fi
fi

step "listing the tools"
tools="$(curl -sS --max-time 30 "$url" -H 'content-type: application/json' -H 'accept: application/json, text/event-stream' \
  -d '{"jsonrpc":"2.0","id":1,"method":"tools/list","params":{}}')"
for tool in add search_logs build_pipeline; do
  if [[ "$tools" != *"\"name\":\"$tool\""* ]]; then
    echo "$tools"
    step "FAILED: tools/list has no $tool"
    exit 1
  fi
done

step "completing a task: call search_logs"
export XDG_STATE_HOME="$work/client-state"  # the client's task journal
result="$(env -u PYTHONPATH timeout 120 .venv/bin/mcp-tasks-temporal call search_logs --url "$url" --json \
  --args '{"pattern": "release", "seconds_per_file": 0.1}')" || {
  echo "$result"
  step "FAILED: call search_logs"
  exit 1
}
if [[ "$result" != *"approved release 1.4"* ]]; then
  echo "$result"
  step "FAILED: search_logs did not return its matches"
  exit 1
fi

step "stopping dev"
kill -INT "$dev_pid"
dev_rc=0
wait "$dev_pid" || dev_rc=$?
dev_pid=""
if [[ "$dev_rc" != 0 ]]; then
  cat "$work/dev.log"
  step "FAILED: dev exited with $dev_rc on Ctrl-C"
  exit 1
fi
step "passed"
