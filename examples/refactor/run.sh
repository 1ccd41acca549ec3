#!/usr/bin/env bash
# Runs arbor's refactor example on a fresh copy of the sample project: /root spawns three
# workers, each renames fetch_data to load_records in the file it owns, /root waits for all
# of them and summarises. The repository stays clean; the copy's location is printed.
set -euo pipefail
here="$(cd "$(dirname "$0")" && pwd)"
repo="$(cd "$here/../.." && pwd)"

cargo build --release --quiet -p arbor-cli --manifest-path "$repo/Cargo.toml"
arbor="$repo/target/release/arbor"

work="$(mktemp -d "${TMPDIR:-/tmp}/arbor-refactor.XXXXXX")"
cp -R "$here/project" "$work/project"
home="$work/arbor-home"
echo "sample project copied to $work/project (arbor state in $home)"

status=0
"$arbor" --home "$home" exec --script "$here/script.json" --cwd "$work/project" \
  "Rename fetch_data to load_records across the project" \
  > "$work/answer.txt" 2> "$work/progress.log" || status=$?
cat "$work/progress.log" >&2
session="$(sed -n 's/^session: //p' "$work/progress.log" | head -1)"
echo
echo "the root's answer:"
cat "$work/answer.txt"
[ "$status" -eq 0 ] || { echo "arbor exec failed with exit code $status" >&2; exit "$status"; }

echo
echo "renamed symbol in the copy:"
grep -rn load_records "$work/project/src"
echo
echo "the tree of session $session:"
"$arbor" --home "$home" tree "$session"
