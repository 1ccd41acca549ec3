#!/usr/bin/env python3
"""Runs every arbor-bench benchmark with two builds, alternating A, B, A, B, ... so that both
see the same machine, and prints one JSON line per measured figure: the median of each build,
the change, and whether it is worse by more than the tolerance (5 %).

Usage: bench/paired.py BEFORE_BENCH_BIN AFTER_BENCH_BIN [--rounds N] [--bench NAME ...]
The arbor-bench binaries find their own `arbor` next to them.
"""

import argparse
import json
import statistics
import subprocess
import sys

BENCHES = ["store", "rollout", "fanout", "stream", "http", "revive", "resume", "churn",
           "pingpong", "approvals", "reconcile", "durability"]
# Fields that tell runs of one benchmark apart rather than measure them.
KEYS = ["workers", "items", "format", "layer", "depth", "edges", "agents", "lines", "tasks",
        "messages", "followups", "max_resident", "lines_behind", "from", "disk", "workload"]
HIGHER = ("per_s", "per_sec", "ratio", "per_sync")
IGNORE = ("goal", "checksum", "runs", "found", "bytes", "syncs", "commits", "log_lines",
          "requests", "responses", "events", "sync_us", "min_ms")


def better_is_higher(field):
    return any(field.endswith(h) or h in field for h in HIGHER)


def measured(field, value):
    if not isinstance(value, (int, float)) or isinstance(value, bool):
        return False
    return field not in KEYS and not any(field.startswith(i) or field.endswith(i) for i in IGNORE)


def run(binary, bench):
    out = subprocess.run([binary, bench], capture_output=True, text=True, timeout=1800)
    if out.returncode != 0:
        sys.stderr.write(f"{binary} {bench} failed: {out.stderr[-400:]}\n")
    rows = []
    for line in out.stdout.splitlines():
        try:
            rows.append(json.loads(line))
        except json.JSONDecodeError:
            continue
    return rows


def key_of(row):
    parts = [row.get("bench", "?")]
    parts += [f"{k}={row[k]}" for k in KEYS if k in row]
    return " ".join(str(p) for p in parts)


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("before")
    parser.add_argument("after")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--bench", action="append")
    parser.add_argument("--tolerance", type=float, default=0.05)
    args = parser.parse_args()
    figures = {}  # key -> field -> {"before": [...], "after": [...]}
    for bench in args.bench or BENCHES:
        for _ in range(args.rounds):
            for side, binary in (("before", args.before), ("after", args.after)):
                for row in run(binary, bench):
                    for field, value in row.items():
                        if measured(field, value):
                            slot = figures.setdefault(key_of(row), {}).setdefault(field, {})
                            slot.setdefault(side, []).append(float(value))
    worse = 0
    for key, fields in figures.items():
        for field, sides in fields.items():
            if "before" not in sides or "after" not in sides:
                continue
            before = statistics.median(sides["before"])
            after = statistics.median(sides["after"])
            if before == 0:
                continue
            change = after / before - 1
            loss = -change if better_is_higher(field) else change
            flag = loss > args.tolerance
            worse += flag
            print(json.dumps({"figure": f"{key} {field}", "before": round(before, 4),
                              "after": round(after, 4), "change": round(change, 4),
                              "worse": flag}))
    print(json.dumps({"figures_worse_than_tolerance": worse, "rounds": args.rounds}))


if __name__ == "__main__":
    main()
