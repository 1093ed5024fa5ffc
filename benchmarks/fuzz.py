"""Fuzz campaign over every reader and command: ``python -m benchmarks fuzz --mutants 5000``.

Per input kind (our ``.elg``, a merged EPILOG file, an EPIK directory, an OTF2 archive, CUBE4 plain and with
compressed data, CUBE3, a JSON summary) ``--mutants`` mutants of one small file go through the commands that take that kind, in turn
(``expert-analyze``, ``expert-trace check/info/dump/convert``, ``expert-profile``; ``expert-report``,
``expert-diff``, ``expert-check``).  The engine is ``tests/helpers/fuzzing.py`` (the fast test
``tests/fuzz/test_fuzz.py`` runs it at a small size).  Prints a table per kind: mutants, results, clean
errors, tracebacks, hangs, memory overruns, the largest peak RSS; then every finding with its mutant kept
under ``--keep``.  Exit status 1 if there is a finding.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
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
    ap.add_argument("--cube-memory", action="store_true",
                    help="instead: peak RSS of expert-report/diff/check on a sane .cubex and hostile ones of its size")
    ap.add_argument("--cube-bytes", type=int, default=1 << 20, help="size of those .cubex files (default 1 MiB)")
    args = ap.parse_args(argv)
    if args.cube_memory:
        return cube_memory(args.cube_bytes, args.timeout * 15)
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
    if not findings and not args.keep:
        shutil.rmtree(keep, ignore_errors=True)
    return 1 if findings else 0


def _peak(argv: list[str], timeout: float) -> tuple[int, float, int]:
    """(exit status, seconds, peak RSS in MiB) of a command."""
    t0 = time.monotonic()
    p = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = t0 + timeout
    while True:
        pid, status, usage = os.wait4(p.pid, os.WNOHANG)
        if pid:
            p.returncode = os.waitstatus_to_exitcode(status)
            return p.returncode, time.monotonic() - t0, usage.ru_maxrss >> 10
        if time.monotonic() > deadline:
            p.kill()
            pid, status, usage = os.wait4(p.pid, 0)
            p.returncode = -9
            return -9, time.monotonic() - t0, usage.ru_maxrss >> 10
        time.sleep(0.05)


def cube_memory(target: int, timeout: float) -> int:
    """The result tools on hostile_cubes' files: sane .cubex files and hostile ones of their size.

    Each tool's peak on a hostile file is divided by its peak on the sane file of the same kind (``sane``,
    values stored plain, for ``many_sparse``; ``sane_compressed``, values in zlib blocks as Scalasca's writer
    stores them, for ``zeros`` and ``compressed``; ``sane_calltree``, a file that is mostly its anchor, for
    ``void_metrics`` and the ``tiny_*`` anchors), and by the lowest sane peak: the issue's bound is 2 x."""
    kinds = ("sane", "sane_compressed", "sane_calltree", "many_sparse", "zeros", "compressed",
             "void_metrics", "tiny_regions", "tiny_metrics", "tiny_locations")  # hostile_cubes.KINDS
    sane_kinds = ("sane", "sane_compressed", "sane_calltree")
    same_kind = {"many_sparse": "sane", "zeros": "sane_compressed", "compressed": "sane_compressed",
                 "void_metrics": "sane_calltree", "tiny_regions": "sane_calltree", "tiny_metrics": "sane_calltree",
                 "tiny_locations": "sane_calltree"}
    work = Path(tempfile.mkdtemp(prefix="expert-cube-memory-"))
    # built in a process of their own: a child's peak RSS counts the parent's pages at fork (Linux)
    script = ("import sys; from pathlib import Path; from hostile_cubes import hostile_cubex; "
              "[print(k, hostile_cubex(Path(sys.argv[1]) / f'{k}.cubex', k, int(sys.argv[2]))) for k in sys.argv[3:]]")
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(HELPERS.parents[1]), str(HELPERS)]))
    made = subprocess.run([sys.executable, "-c", script, str(work), str(target), *kinds], env=env, check=True,
                          capture_output=True, text=True).stdout.split()
    sizes = dict(zip(made[::2], made[1::2]))
    bindir = Path(sys.executable).parent
    tool = {t: str(bindir / t) if (bindir / t).exists() else t for t in ("expert-report", "expert-diff", "expert-check")}
    print(f"result tools on .cubex files of about {target >> 10} kB: exit status, seconds, peak RSS (MiB), and for "
          "a hostile file its peak / the sane file of its kind's peak, / the lowest sane peak")
    print("| file | bytes | expert-report | expert-diff sane FILE | expert-check FILE --baseline sane |")
    print("|---|---|---|---|---|")
    peaks: dict[str, list[int]] = {}
    worst = 0.0
    try:
        sane = work / "sane.cubex"
        for kind in kinds:
            path, size = work / f"{kind}.cubex", sizes[kind]
            cells = []
            for i, argv in enumerate(([tool["expert-report"], str(path), "-o", str(work / "r.html")],
                                      [tool["expert-diff"], str(sane), str(path)],
                                      [tool["expert-check"], str(path), "--baseline", str(sane),
                                       "--max-increase", "time=10%"])):
                rc, secs, peak = _peak(argv, timeout)
                peaks.setdefault(kind, []).append(peak)
                cell = f"{rc}, {secs:.1f} s, {peak} MiB" if rc != -9 else f"killed after {secs:.0f} s"
                if kind in same_kind:
                    own = peak / peaks[same_kind[kind]][i]
                    low = peak / min(peaks[k][i] for k in sane_kinds)
                    worst = max(worst, low)
                    cell += f", {own:.2f} x / {low:.2f} x"
                cells.append(cell)
            print(f"| {kind} | {int(size):,} | " + " | ".join(cells) + " |")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"largest hostile peak / lowest sane peak: {worst:.2f} x ({'within' if worst <= 2 else 'ABOVE'} 2 x)")
    return 0 if worst <= 2 else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
