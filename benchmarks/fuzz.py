"""Fuzz campaign over every reader and command: ``python -m benchmarks fuzz --mutants 5000``.

Per input kind (our ``.elg``, a merged EPILOG file, an EPIK directory, an OTF2 archive, CUBE4, CUBE3, a JSON
summary) ``--mutants`` mutants of one small file go through the commands that take that kind, in turn
(``expert-analyze``, ``expert-trace check/info/dump/convert``, ``expert-profile``; ``expert-report``,
``expert-diff``, ``expert-check``).  The engine is ``tests/helpers/fuzzing.py`` (the fast test
``tests/fuzz/test_fuzz.py`` runs it at a small size).  Prints a table per kind: mutants, results, clean
errors, tracebacks, hangs, memory overruns, the largest peak RSS; then every finding with its mutant kept
under ``--keep``.  Exit status 1 if there is a finding.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HELPERS = Path(__file__).resolve().parents[1] / "tests" / "helpers"


def main(argv: list[str]) -> int:
    sys.path.insert(0, str(HELPERS))
    import fuzzing

    ap = argparse.ArgumentParser(prog="python -m benchmarks fuzz", description=__doc__.split("\n\n")[0])
    ap.add_argument("--mutants", type=int, default=300, help="mutants per input kind (default 300)")
    ap.add_argument("--kinds", default=",".join(fuzzing.KINDS), help="comma-separated input kinds (default: all)")
    ap.add_argument("--timeout", type=float, default=20.0, help="seconds one command may take (default 20)")
    ap.add_argument("--seed", type=int, default=18, help="random seed (default 18)")
    ap.add_argument("--workers", type=int, default=2, help="kinds fuzzed at once, one process each (default 2)")
    ap.add_argument("--minutes", type=float, default=0,
                    help="wall time of the whole campaign: each kind stops after its share (default: none)")
    ap.add_argument("--nice", type=int, default=10, help="niceness of the worker processes (default 10)")
    ap.add_argument("--keep", default=None, help="folder for the mutants of findings (default: a temporary one)")
    args = ap.parse_args(argv)
    kinds = [k for k in args.kinds.split(",") if k]
    unknown = [k for k in kinds if k not in fuzzing.KINDS]
    if unknown:
        print(f"unknown kinds {unknown}; kinds: {', '.join(fuzzing.KINDS)}", file=sys.stderr)
        return 2
    keep = Path(args.keep or tempfile.mkdtemp(prefix="expert-fuzz-"))
    share = 60 * args.minutes * max(1, args.workers) / len(kinds) if args.minutes else None
    findings: list = []

    def one(kind):
        t0 = time.monotonic()
        deadline = t0 + share if share else None
        w = fuzzing.Worker(nice=args.nice)
        try:
            counts = fuzzing.campaign(kind, args.mutants, keep / kind, args.seed, args.timeout, w, findings, deadline)
        finally:
            w.close()
        counts["seconds"] = time.monotonic() - t0
        return kind, counts

    with ThreadPoolExecutor(max(1, args.workers)) as pool:
        results = dict(pool.map(one, kinds))
    print(f"fuzz campaign: {args.mutants} mutants per kind, seed {args.seed}, time-out {args.timeout:g} s, "
          "overrun = peak RSS above twice the unmutated file's through the same command")
    head = ("kind", "mutants", "results", "clean errors", "tracebacks", "hangs", "overruns", "max RSS MiB",
            "base RSS MiB", "seconds")
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for kind in kinds:
        c = results[kind]
        print(f"| {kind} | {c['mutants']} | {c['ok']} | {c['clean']} | {c['traceback']} | {c['hang']} | "
              f"{c['overrun']} | {c['max_rss_mib']} | {c['base_rss_mib']} | {c['seconds']:.0f} |")
    for kind, command, outcome, mutant, last in findings:
        print(f"FINDING {kind} {command}: {outcome}: {mutant}: {last}")
    print(f"mutants of findings kept under {keep}" if findings else "no findings")
    return 1 if findings else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
