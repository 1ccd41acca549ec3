#!/usr/bin/env bash
# Installs the pinned external programs the tests run (tests/tools/versions) into one folder:
# npm packages under $DIR/npm, a Python virtual environment with the `mcp` client under
# $DIR/venv. Idempotent: a stamp holding the versions file's contents marks a finished
# install. DIR is $ARBOR_TEST_TOOLS, else target/test-tools of the workspace.
# The test support runs this itself on first use; .ci/run runs it up front.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
dir=${ARBOR_TEST_TOOLS:-$here/../../target/test-tools}
mkdir -p "$dir"
dir=$(cd "$dir" && pwd)
stamp="$dir/installed"
if [ -f "$stamp" ] && cmp -s "$stamp" "$here/versions"; then
  exit 0
fi
spec() { sed -n "s/^$1=//p" "$here/versions"; }
for tool in node npm python3; do
  command -v "$tool" >/dev/null 2>&1 || { echo "error: the tests need $tool (install Node.js 18+ and Python 3.10+)" >&2; exit 1; }
done
npm install --prefix "$dir/npm" --no-audit --no-fund --no-save --loglevel=error \
  "$(spec SERVER_FILESYSTEM)" "$(spec SERVER_EVERYTHING)" "$(spec RESTATE_SERVER)" >&2
if [ ! -x "$dir/venv/bin/python" ]; then
  python3 -m venv "$dir/venv"
fi
"$dir/venv/bin/pip" install --quiet --disable-pip-version-check "$(spec PYTHON_MCP)" >&2
cp "$here/versions" "$stamp"
echo "test tools installed in $dir" >&2
