#!/usr/bin/env bash
# The Restate engine's fan-out on W worker processes: `arbor engine up` on free loopback ports
# (a temporary data directory), W-1 more workers on the same address, then a scripted tree
# whose root spawns N children that each answer after DELAY_MS, waits for all and answers.
# Prints one JSON line: {"bench":"restate_fanout","agents":N,"workers":W,"delay_ms":D,"wall_ms":T}.
# Usage: bench/restate-fanout.sh N W [DELAY_MS]
# ARBOR (default target/release/arbor) and ARBOR_RESTATE_SERVER (default the test tools'
# restate-server) name the binaries.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
n=${1:?N}
workers=${2:?W}
delay=${3:-50}
arbor=${ARBOR:-$here/target/release/arbor}
export ARBOR_RESTATE_SERVER=${ARBOR_RESTATE_SERVER:-$here/target/test-tools/npm/node_modules/.bin/restate-server}
dir=$(mktemp -d)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  [ -n "${up:-}" ] && kill -INT "$up" 2>/dev/null && wait "$up" 2>/dev/null || true
  rm -rf "$dir"
}
trap cleanup EXIT
port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
ingress=$(port); admin=$(port); node=$(port); wport=$(port)
"$arbor" --home "$dir/home" engine up --dir "$dir/restate" --ingress-port "$ingress" \
  --admin-port "$admin" --node-port "$node" --worker "127.0.0.1:$wport" > "$dir/up.out" &
up=$!
until grep -q '^add a worker' "$dir/up.out" 2>/dev/null; do
  kill -0 "$up" 2>/dev/null || { cat "$dir/up.out" >&2; exit 1; }
  sleep 0.1
done
for _ in $(seq 2 "$workers"); do
  "$arbor" worker --engine restate --listen "127.0.0.1:$wport" > "$dir/w.out" &
  pids+=($!)
done
python3 - "$n" "$delay" > "$dir/script.json" <<'PY'
import json, sys
n, delay = int(sys.argv[1]), int(sys.argv[2])
spawns = [{"call": "spawn_agent", "args": {"task_name": f"w{i}", "message": f"task {i}"}} for i in range(n)]
print(json.dumps({"agents": [
  {"match": "/root", "responses": [spawns,
     [{"call": "wait_agent", "args": {"mode": "all", "timeout_ms": 3600000}}],
     [{"say": "collected"}]]},
  {"match": "/root/*", "responses": [{"delay_ms": delay, "items": [{"say": "answer {{task_name}}"}]}]}]}))
PY
start=$(date +%s%N)
answer=$("$arbor" exec --engine restate --restate-url "http://127.0.0.1:$ingress" \
  --script "$dir/script.json" --cwd "$dir" "fan out" 2>/dev/null)
end=$(date +%s%N)
[ "$answer" = "collected" ] || { echo "unexpected answer: $answer" >&2; exit 1; }
echo "{\"bench\":\"restate_fanout\",\"agents\":$n,\"workers\":$workers,\"delay_ms\":$delay,\"wall_ms\":$(( (end - start) / 1000000 ))}"
