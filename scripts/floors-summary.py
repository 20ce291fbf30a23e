#!/usr/bin/env python3
"""The table of scripts/floors.sh's lines: per kind (and receiver), each
floor's cycles (per round trip or per exit, median over the runs) and its
ratio to the first floor's (the C floor), the median of the run-by-run
ratios; the round trips twice: their means, then their medians (the
floors' median= field), which one L1 timer tick does not move.
    scripts/floors-summary.py LOG"""
import re
import statistics
import sys

rows = {}  # (kind, receiver) -> {label: {run: cycles per}}
labels = []
for line in open(sys.argv[1], errors="replace"):
    m = re.search(r"\b([A-Za-z0-9_+-]+) r=(\d+) floor-ipi kind=(\S+) receiver=(\w+) rounds=(\d+) \S+ cycles=(\d+)", line)
    if m:
        who, run, kind, recv, n, cyc = m.groups()
        med = re.search(r" median=(\d+)", line)
        if med:
            rows.setdefault((kind, recv + ", median"), {}).setdefault(who, {})[int(run)] = int(med.group(1))
    else:
        m = re.search(r"\b([A-Za-z0-9_+-]+) r=(\d+) floor kind=(\S+) count=(\d+) cycles=(\d+)", line)
        if not m:
            continue
        who, run, kind, n, cyc = m.groups()
        recv = "exit"
    if who not in labels:
        labels.append(who)
    rows.setdefault((kind, recv), {}).setdefault(who, {})[int(run)] = int(cyc) / int(n)
base = labels[0] if labels else ""
head = " | ".join(f"{l}" + ("" if l == base else f" | {l}/{base}") for l in labels)
print(f"| kind | per | {head} |")
print("|---|---|" + "---:|" * (2 * len(labels) - 1))
for (kind, recv), by in sorted(rows.items(), key=lambda kv: (kv[0][1] == "exit", kv[0])):
    cells = []
    for l in labels:
        runs = by.get(l, {})
        cells.append(f"{statistics.median(runs.values()):,.0f}" if runs else "-")
        if l != base:
            rs = [runs[r] / by[base][r] for r in runs if r in by.get(base, {})]
            cells.append(f"{statistics.median(rs):.2f}" if rs else "-")
    per = "exit" if recv == "exit" else "RT, " + recv + ("" if recv.endswith("median") else ", mean")
    print(f"| {kind} | {per} | " + " | ".join(cells) + " |")
