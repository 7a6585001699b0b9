#!/usr/bin/env python3
"""Summarises a recourse_bench JSON file (--benchmark_out) as one line per benchmark.

Usage: bench/summarize.py bench/results/run-YYYYMMDD-HHMMSS.json

For each benchmark, sorted by name: the minimum and the median over its repetitions of the CPU
time per iteration (ns, or ms for the compile benchmarks), and for the threads benchmarks the
highest items per second of a repetition (decisions per second summed over the threads). On a
shared virtual machine noise only adds time, so the minimum (the maximum rate) is the figure
least disturbed by other tenants; bench/README.md quotes it.
"""
import json
import statistics
import sys


def main(path):
    with open(path) as f:
        data = json.load(f)
    runs = {}
    for b in data["benchmarks"]:
        if b.get("run_type") != "iteration":
            continue
        runs.setdefault(b["run_name"], []).append(b)
    print(f"{'benchmark':58s} {'min':>10s} {'median':>10s} unit  extra")
    for name, reps in sorted(runs.items()):
        times = [r["cpu_time"] for r in reps]
        extra = ""
        if "threads:" in name:
            extra = f"{max(r['items_per_second'] for r in reps) / 1e6:.2f}M items/s"
        for key in ("rows", "table_MiB", "diagnostics"):
            if key in reps[0]:
                extra += f" {key}={reps[0][key]:g}"
        if reps[0].get("label"):
            extra += " " + reps[0]["label"]
        print(f"{name:58s} {min(times):10.1f} {statistics.median(times):10.1f} "
              f"{reps[0]['time_unit']:4s}  {extra.strip()}")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit(__doc__)
    main(sys.argv[1])
