#!/usr/bin/env bash
# Runs a command with /tmp on a freshly made ext4 (journal, mkfs defaults) in a private mount
# namespace, so a slow-disk measurement does not depend on what earlier runs deleted there
# (docs/durability.md, "Measuring on a slow disk"). Needs root, util-linux and e2fsprogs.
# Usage: bench/fresh-tmp.sh COMMAND [ARG...]
#   e.g. ARBOR_BIN=target/release/arbor bench/fresh-tmp.sh ../shared/tools/durability-ratio.sh
# IMAGE (default /var/tmp/arbor-fresh-tmp.img) is the loop file, SIZE (default 8G) its size;
# the file is sparse and removed afterwards.
set -euo pipefail
[ $# -gt 0 ] || { echo "usage: bench/fresh-tmp.sh COMMAND [ARG...]" >&2; exit 2; }
image=${IMAGE:-/var/tmp/arbor-fresh-tmp.img}
case "$image" in /tmp/*) echo "IMAGE must not be under /tmp: $image" >&2; exit 2 ;; esac
trap 'rm -f "$image"' EXIT
truncate -s "${SIZE:-8G}" "$image"
mkfs.ext4 -q -F "$image"
# The command and its arguments reach the inner shell as its positional parameters.
unshare -m bash -c 'mount --make-rprivate / && mount -o loop "$0" /tmp && chmod 1777 /tmp && "${@}"; rc=$?; umount /tmp; exit $rc' "$image" "$@"
