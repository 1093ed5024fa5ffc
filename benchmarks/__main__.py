"""Dispatch ``python -m benchmarks <name> [options]`` to a benchmark module."""

import importlib
import sys

#: benchmark name -> module (each has main(argv) -> int)
BENCHMARKS = {
    "trace_io": "benchmarks.trace_io",
    "runtime_overhead": "benchmarks.runtime_overhead",
}


def main(argv: list[str]) -> int:
    if not argv or argv[0] in ("-h", "--help") or argv[0] not in BENCHMARKS:
        print("usage: python -m benchmarks NAME [options]   (NAME --help for its options)")
        print("benchmarks: " + ", ".join(sorted(BENCHMARKS)))
        return 0 if argv and argv[0] in ("-h", "--help") else 2
    return importlib.import_module(BENCHMARKS[argv[0]]).main(argv[1:]) or 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
