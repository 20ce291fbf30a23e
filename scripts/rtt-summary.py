#!/usr/bin/env python3
"""Summarise 'govmm bench-rtt' reports (report.csv) of an A/B run
(scripts/ab-rtt.sh): per binary and case, each run's cycles per round trip
and its ratio to the IPI floor measured in the same run (of the means,
then of the medians), then the median ratios.
    scripts/rtt-summary.py OUT"""
import csv, glob, os, re, statistics, sys
from collections import defaultdict

out = sys.argv[1]
ratios = defaultdict(list)
for path in sorted(glob.glob(os.path.join(out, "*-*", "report.csv"))):
    run = os.path.basename(os.path.dirname(path))
    name = re.sub(r"-\d+$", "", run)
    for r in csv.DictReader(open(path)):
        med = float(r.get("vs_floor_ipi_median") or 0)
        if r["delivery"] == "floor-ipi":
            key = (name, r["mode"], "floor-ipi", r["receiver"], "-")
            ratios[key].append((float(r["cycles_per_rtt"]), 1.0, 1.0))
            continue
        key = (name, r["mode"], r["delivery"], r["receiver"], r["halt_poll"])
        ratios[key].append((float(r["cycles_per_rtt"]), float(r["vs_floor_ipi"]), med))
for key in sorted(ratios):
    vals = ratios[key]
    print("%-14s %-12s %-10s %-9s poll %-3s  cycles/RT %s  vs floor IPI %s (median %.2f)  of medians %s (median %.2f)" % (
        key + (" ".join("%.0f" % c for c, _, _ in vals), " ".join("%.2f" % v for _, v, _ in vals),
               statistics.median(v for _, v, _ in vals), " ".join("%.2f" % m for _, _, m in vals),
               statistics.median(m for _, _, m in vals))))
