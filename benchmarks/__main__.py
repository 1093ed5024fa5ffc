"""Dispatch ``python -m benchmarks <name> [options]`` to a benchmark module."""

import importlib
import sys

#: benchmark name -> module (each has main(argv) -> int)
BENCHMARKS = {
    "trace_io": "benchmarks.trace_io",
    "analysis": "benchmarks.analysis",
    "runtime_overhead": "benchmarks.runtime_overhead",
    "unwind_cost": "benchmarks.unwind_cost",
    "otf2": "benchmarks.otf2",
    "epilog": "benchmarks.epilog",
    "fuzz": "benchmarks.fuzz",
    "tasks": "benchmarks.tasks",
    "rma": "benchmarks.rma",
    "scaling": "benchmarks.scaling",
    "fresh_pages": "benchmarks.fresh_pages",
}


def main(argv: list[str]) -> int:
    if argv and argv[0] in ("-h", "--help"):
        print("usage: python -m benchmarks [NAME [options]]   (NAME --help for its options; no NAME runs all)")
        print("benchmarks: " + ", ".join(sorted(BENCHMARKS)))
        return 0
    if not argv:  # ./dev bench: every benchmark with its default options
        return max(importlib.import_module(BENCHMARKS[name]).main([]) or 0 for name in BENCHMARKS)
    if argv[0] not in BENCHMARKS:
        print(f"unknown benchmark {argv[0]!r}; benchmarks: " + ", ".join(sorted(BENCHMARKS)), file=sys.stderr)
        return 2
    return importlib.import_module(BENCHMARKS[argv[0]]).main(argv[1:]) or 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
