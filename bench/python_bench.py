#!/usr/bin/env python3
"""The Python package's cost per call (bench/README.md, "Python"): decide from a dict, decide
from JSON text, and one runner operation, next to the C++ figures of the same run (when
build/bench/recourse_bench is built). Run with the package installed (scripts/python.sh makes
build/python-venv):

    build/python-venv/bin/python bench/python_bench.py [--seconds 1] [--repeat 5]

Each figure is the best of --repeat runs of about --seconds of the thread's CPU time each
(time.thread_time_ns: time the thread waited for a core is left out), in ns per call; a timing
is reported, never asserted.
"""

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import recourse

ROOT = Path(__file__).resolve().parents[1]
# The first line of rules/traces/sample.jsonl: a rate limit with a message and a trace id.
LINE = json.loads((ROOT / "rules" / "traces" / "sample.jsonl").read_text().splitlines()[0])


def best_ns(fn, seconds, repeat):
    """ns per call of fn(): the best of `repeat` runs of about `seconds`."""
    n = 1
    while True:  # calls per run: enough for `seconds`
        start = time.thread_time_ns()
        for _ in range(n):
            fn()
        elapsed = time.thread_time_ns() - start
        if elapsed > seconds * 1e9 / 10:
            n = max(1, int(n * seconds * 1e9 / elapsed))
            break
        n *= 4
    best = float("inf")
    for _ in range(repeat):
        start = time.thread_time_ns()
        for _ in range(n):
            fn()
        best = min(best, (time.thread_time_ns() - start) / n)
    return best


def cpp_figures():
    """The C++ benchmarks of the same machine and run, ns: decide() on read inputs, and
    read_envelope() of JSON then decide()."""
    binary = ROOT / "build" / "bench" / "recourse_bench"
    if not binary.exists():
        return {}
    out = subprocess.run([str(binary), "--benchmark_filter=^(decide/seed|json_to_decision/seed)$",
                          "--benchmark_format=json", "--benchmark_min_time=0.5"],
                         capture_output=True, text=True, check=True)
    return {b["name"]: b["cpu_time"] for b in json.loads(out.stdout)["benchmarks"]}


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=1.0)
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    bundle = recourse.Bundle.from_paths(ROOT / "rules" / "examples")
    envelope, context = LINE["envelope"], LINE["context"]
    envelope_text, context_text = json.dumps(envelope), json.dumps(context)
    store, health = recourse.Store(), None
    health = recourse.Health(store)

    def operation():
        runner = recourse.Runner(bundle, "search.query", {"q": "x"}, operation_id="op",
                                 store=store, health=health)
        runner.next(1)
        runner.succeed(2)
        runner.next(3)

    decision_json = json.dumps(bundle.decide(envelope, context).to_dict())
    # The same without its message: the engine's steering detector reads every message on every
    # decision (bench/README.md, "Envelope JSON to decision"); this shows the rest.
    silent = {k: v for k, v in envelope.items() if k != "message"}
    figures = {
        "decide from a dict": best_ns(lambda: bundle.decide(envelope, context), args.seconds,
                                      args.repeat),
        "decide from a dict, no message": best_ns(lambda: bundle.decide(silent, context),
                                                  args.seconds, args.repeat),
        "decide from JSON text": best_ns(lambda: bundle.decide(envelope_text, context_text),
                                         args.seconds, args.repeat),
        "runner operation (next, succeed, next)": best_ns(operation, args.seconds, args.repeat),
        # References: what building the decision from its JSON text would cost on its own, and
        # the machine's speed for plain Python (a quiet 2-core machine: about 60 ns).
        "reference: json.loads of the decision's JSON": best_ns(
            lambda: json.loads(decision_json), args.seconds, args.repeat),
        "reference: a dict display of 10 items": best_ns(
            lambda: {"a": 1, "b": 2, "c": 3, "d": 4, "e": 5, "f": 6, "g": 7, "h": 8, "i": 9,
                     "j": 10}, args.seconds, args.repeat),
    }
    for name, ns in cpp_figures().items():
        figures[f"C++ {name}"] = ns
    width = max(len(k) for k in figures)
    print(f"Python {sys.version.split()[0]}, load average {os.getloadavg()[0]:.1f}")
    for name, ns in figures.items():
        print(f"{name:<{width}}  {ns:8.0f} ns")


if __name__ == "__main__":
    main()
