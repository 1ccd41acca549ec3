#!/usr/bin/env bash
# Runs arbor's refactor example on a fresh copy of the sample project: /root spawns three
# workers, each renames fetch_data to load_records in the file it owns, /root waits for all
# of them and summarises. The repository stays clean; the copy's location is printed.
#
#   run.sh               the workers share the copy (each owns one file)
#   run.sh --worktrees   the copy is made a git repository; each worker edits a git worktree
#                        of its own, and /root merges all three back, then closes them
#
# ARBOR_BIN=path/to/arbor runs that binary instead of building one (profile quick).
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"

script="$here/script.json"
worktrees=false
for arg in "$@"; do
  case "$arg" in
    --worktrees) worktrees=true; script="$here/script-worktrees.json" ;;
    *) echo "usage: run.sh [--worktrees]" >&2; exit 2 ;;
  esac
done

if [ -n "${ARBOR_BIN:-}" ]; then
  arbor="$ARBOR_BIN"
else
  # The quick profile: the shortest build; the run does not need an optimised binary.
  cargo build --profile quick --quiet -p arbor-cli --manifest-path "$repo/Cargo.toml"
  arbor="${CARGO_TARGET_DIR:-$repo/target}/quick/arbor"
fi

work="$(mktemp -d "${TMPDIR:-/tmp}/arbor-refactor.XXXXXX")"
cp -R "$here/project" "$work/project"
home="$work/arbor-home"
echo "sample project copied to $work/project (arbor state in $home)"
if $worktrees; then
  git -C "$work/project" init -q
  git -C "$work/project" add -A
  git -C "$work/project" -c user.name="arbor example" -c user.email=example@arbor.invalid \
    commit -q -m "the sample project"
  echo "the copy is a git repository; each worker gets a worktree of its own"
fi

status=0
"$arbor" --home "$home" exec --script "$script" --cwd "$work/project" \
  "Rename fetch_data to load_records across the project" \
  > "$work/answer.txt" 2> "$work/progress.log" || status=$?
cat "$work/progress.log" >&2
# The first line is `session: <id>`, the second `handle: <handle>`; commands take either.
session="$(sed -n 's/^handle: //p' "$work/progress.log" | head -1)"
echo
echo "the root's answer:"
cat "$work/answer.txt"
[ "$status" -eq 0 ] || { echo "arbor exec failed with exit code $status" >&2; exit "$status"; }

echo
echo "renamed symbol in the copy:"
grep -rn load_records "$work/project/src"
if $worktrees; then
  echo
  echo "the copy's changes (merged from the three worktrees, not committed):"
  git -C "$work/project" status --short
  echo "arbor branches left: $(git -C "$work/project" branch --list 'arbor/*' | wc -l)"
fi
echo
echo "the tree of session $session:"
"$arbor" --home "$home" tree "$session"
