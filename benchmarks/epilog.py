"""EPILOG reader benchmark: records decoded per second by the numba kernel, and whole archives read.

    python -m benchmarks epilog [--records 4e6] [--metrics 2] [--repeat 3] [--reference 2e5] [--archive 32x64x10]

Part 1 decodes one synthetic big-endian per-rank EPILOG stream of N records
(ENTER/EXIT pairs of 64 thread-merged locations, each record with location
id and ``--metrics`` counter values, as a Scalasca 1.4 Blue Gene/Q run writes
them) with ``EpilogImporter.read_events`` (the kernel's counting and filling
passes) and then the whole-trace fix-ups (``finish``: teams, locks, receive
bytes, ticks; wall-clock and CPU time).  Rates are records (not output rows) per second of wall-clock
and of CPU time (one thread: CPU time is the per-core rate; of ``--repeat``
runs the one with the least CPU time is shown, as other load only adds).  The slow
Python reference reader (``tests/helpers/epilog_reference.py``) decodes the
first ``--reference`` records of the same stream for comparison.

Part 2 reads a generated Blue Gene/Q-like EPIK archive (RANKSxTHREADSxITERATIONS,
``tests/helpers/epilog_samples.epik_bgq``: gzip'ed big-endian per-rank files)
with ``tracefmt.epilog.read``, gunzip included, and the part of it the fix-ups take.

Kernels are compiled (or loaded from numba's cache) before anything is timed.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

import numpy as np

from tracefmt import epilog
from tracefmt.epilog_records import ELG_BIG_ENDIAN, ELG_NO_ID, HEADER_SIZE, EpilogDefinitions, EpilogFile

_HELPERS = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tests", "helpers")
N_LOC = 64


def synthetic_stream(n_records: int, metc: int) -> bytes:
    """EPILOG 1.9 big-endian bytes: header, then n_records ENTER/EXIT records (pairs) on 64 locations."""
    n_pairs = n_records // 2
    enter = [("len", "u1"), ("type", "u1"), ("lid", ">u4"), ("t", ">f8"), ("rid", ">u4")] + \
        [(f"m{i}", ">u8") for i in range(metc)]
    leave = [("xlen", "u1"), ("xtype", "u1"), ("xlid", ">u4"), ("xt", ">f8")] + \
        [(f"x{i}", ">u8") for i in range(metc)]
    pair = np.zeros(n_pairs, np.dtype(enter + leave))
    i = np.arange(n_pairs)
    pair["len"], pair["type"], pair["xlen"], pair["xtype"] = 16 + 8 * metc, 101, 12 + 8 * metc, 102
    pair["lid"] = pair["xlid"] = i % N_LOC
    pair["t"] = i * 1e-6
    pair["xt"] = i * 1e-6 + 5e-7
    for m in range(metc):
        pair[f"m{m}"] = i * 100 + m
        pair[f"x{m}"] = i * 100 + 50 + m
    return b"EPILOG\0" + bytes([1, 9, ELG_BIG_ENDIAN]) + pair.tobytes()


def _definitions(metc: int) -> EpilogDefinitions:
    d = EpilogDefinitions()
    for lid in range(N_LOC):
        d.locations[lid] = (0, 0, 0, lid)
        d.threads[(0, lid)] = f"thread {lid}"
    d.processes[0] = "rank 0"
    d.regions[0] = ("work", ELG_NO_ID, ELG_NO_ID, ELG_NO_ID, "USR", 1)
    d.metrics = [(m, f"PAPI_{m}", "", 0, 0) for m in range(metc)]
    return d


def decode(data: bytes, metc: int, importer=epilog.EpilogImporter) -> tuple[float, float, float, float, int]:
    """(wall s, cpu s) of read_events and of finish, and the rows produced."""
    imp = importer("bench", _definitions(metc), 1009)
    ctx = epilog.FileContext(EpilogFile("synthetic", data, 1009, ELG_BIG_ENDIAN, ">"), merged=False, rank=0,
                             default_location=None)
    w0, c0 = time.perf_counter(), time.process_time()
    imp.read_events(ctx, HEADER_SIZE)
    w1, c1 = time.perf_counter(), time.process_time()
    asm = imp.finish()
    w2, c2 = time.perf_counter(), time.process_time()
    return w1 - w0, c1 - c0, w2 - w1, c2 - c1, asm.n_events()


class _TimedImporter(epilog.EpilogImporter):
    """The importer, with the CPU time of its fix-ups noted."""

    finish_cpu = 0.0

    def finish(self):
        c0 = time.process_time()
        asm = super().finish()
        _TimedImporter.finish_cpu = time.process_time() - c0
        return asm


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks epilog", description=__doc__.split("\n\n")[0])
    ap.add_argument("--records", type=float, default=4e6)
    ap.add_argument("--metrics", type=int, default=2)
    ap.add_argument("--repeat", type=int, default=3, help="kernel runs; the one with the least CPU time is shown")
    ap.add_argument("--reference", type=float, default=2e5, help="records the Python reference decodes (0: none)")
    ap.add_argument("--archive", default="32x64x10", help="RANKSxTHREADSxITERATIONS of the EPIK archive ('' none)")
    args = ap.parse_args(argv)
    n = int(args.records) // 2 * 2
    decode(synthetic_stream(1000, args.metrics), args.metrics)  # compile / load the kernels
    data = synthetic_stream(n, args.metrics)
    print(f"EPILOG decoding: {n:,} records ({len(data) / 1e6:.0f} MB, big-endian, {args.metrics} metrics, "
          f"{N_LOC} locations)")
    print(f"{'reader':<22} {'records':>11} {'rows':>11} {'decode s':>9} {'cpu s':>7} {'Mrec/s':>8} "
          f"{'Mrec/cpu-s':>10} {'fix-ups s':>9} {'cpu s':>7}")
    rows = [("numba kernel", n, data, epilog.EpilogImporter)]
    if args.reference > 0:
        sys.path.insert(0, _HELPERS)
        from epilog_reference import ReferenceImporter

        k = min(n, int(args.reference) // 2 * 2)
        rows.append(("python reference", k, synthetic_stream(k, args.metrics), ReferenceImporter))
    for name, count, blob, importer in rows:
        runs = [decode(blob, args.metrics, importer) for _ in range(args.repeat if name.startswith("numba") else 1)]
        wd, cd, wf, cf, n_rows = min(runs, key=lambda r: r[1])  # the run with the least CPU time
        print(f"{name:<22} {count:>11,} {n_rows:>11,} {wd:>9.3f} {cd:>7.3f} {count / wd / 1e6:>8.1f} "
              f"{count / cd / 1e6:>10.1f} {wf:>9.3f} {cf:>7.3f}")
    if args.archive:
        sys.path.insert(0, _HELPERS)
        from epilog_samples import epik_bgq

        ranks, threads, iters = (int(x) for x in args.archive.split("x"))
        with tempfile.TemporaryDirectory() as tmp:
            path = epik_bgq(os.path.join(tmp, "epik_bgq"), ranks, threads, iterations=iters)
            size = sum(os.path.getsize(os.path.join(path, "ELG", f)) for f in os.listdir(os.path.join(path, "ELG")))
            w0, c0 = time.perf_counter(), time.process_time()
            asm = epilog.read(path, _TimedImporter)
            w1, c1 = time.perf_counter(), time.process_time()
        print(f"\nEPIK archive {args.archive} (Blue Gene/Q-like, gzip'ed big-endian per-rank files, "
              f"{size / 1e6:.1f} MB on disk): {len(asm.locations)} locations, {asm.n_events():,} event rows")
        print(f"  epilog.read: {w1 - w0:.2f} s wall, {c1 - c0:.2f} s cpu, {asm.n_events() / (w1 - w0) / 1e6:.2f} M "
              f"rows/s; of it the fix-ups (finish) {_TimedImporter.finish_cpu:.3f} s cpu")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
