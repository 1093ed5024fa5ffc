"""Trace I/O benchmark: write and read throughput and peak memory of ``.elg`` files.

    python -m benchmarks trace_io [--sizes 1e6,1e7] [--locations 64] [--dir DIR]

For each size a synthetic trace of that many events over the given number of
locations is written with :class:`tracefmt.TraceWriter`, then read back in a
fresh Python process per measurement (so ``ru_maxrss``, the peak resident set,
belongs to that measurement alone) with and without checksum verification.
The file is in the page cache when it is read (it was just written; the first
read of each size is a discarded warm-up).

Columns: events/s and MB/s of trace data (file bytes) by wall-clock time;
the CPU time the read used ("cpu s", user + system, all threads) and MB per
CPU-second, about what the wall-clock rate would be on an otherwise idle
core (the reader is single-threaded); and the read's peak memory above the
process's baseline divided by the size of the decoded arrays it returned
("peak/decoded"; 1.0 means no overhead at all).  Loading the decoder (the
numba import and its cached machine code, once per process) happens before
the timed read and is printed on its own line.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

_READER = r"""
import json, resource, sys, time
import tracefmt
path, verify = sys.argv[1], sys.argv[2] == "1"
def rss_kib():
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
t0 = time.perf_counter()
tracefmt.reader.load_decoder()  # once per process: numba import and cached machine code
load = time.perf_counter() - t0
base = rss_kib()
t0, c0 = time.perf_counter(), time.process_time()
with tracefmt.open(path, verify=verify) as trace:
    kept = [trace.events(loc) for loc in trace.location_ids.tolist()]
    seconds, cpu = time.perf_counter() - t0, time.process_time() - c0
    n = sum(len(e) for e in kept)
    decoded = sum(e.nbytes for e in kept)
print(json.dumps({"seconds": seconds, "cpu": cpu, "events": n, "decoded": decoded, "peak": (rss_kib() - base) * 1024,
                  "load": load}))
"""


def synthetic_events(n_per_location: int, location: int) -> np.ndarray:
    """ENTER/EXIT pairs of a few regions with a message every 16 events: the shape of real traces."""
    from tracefmt import layout
    from tracefmt.layout import EventType

    rec = np.zeros(n_per_location, layout.EVENT_DTYPE)
    i = np.arange(n_per_location, dtype=np.uint64)
    rec["time"] = i * np.uint64(250) + np.uint64(location)
    rec["type"] = np.where(i % 2 == 0, EventType.ENTER, EventType.EXIT)
    rec["a"] = (i // 2) % 7
    rec["c"] = layout.NO_ID
    send = i % 16 == 5
    rec["type"][send] = EventType.MPI_SEND
    rec["a"][send] = location ^ 1
    rec["d"][send] = 4096
    return rec


def write_trace(path: str, n_events: int, n_locations: int) -> tuple[float, int]:
    """Write the synthetic trace; returns (seconds spent in the writer, file size)."""
    import tracefmt
    from tracefmt.definitions import Comm

    per = n_events // n_locations
    defs = tracefmt.Definitions()
    defs.machines[0] = tracefmt.Machine(0, "bench")
    defs.nodes[0] = tracefmt.Node(0, 0, "node 0")
    for loc in range(n_locations):
        defs.processes[loc] = tracefmt.Process(loc, 0, f"rank {loc}")
        defs.locations[loc] = tracefmt.Location(loc, loc, 0, f"rank {loc} thread 0")
    for rid in range(7):
        defs.regions[rid] = tracefmt.Region(rid, f"region {rid}")
    defs.groups[0] = tuple(range(n_locations))
    defs.comms[0] = Comm(0, 0, "MPI_COMM_WORLD", ranks=defs.groups[0])
    spent = 0.0
    with tracefmt.TraceWriter(path, creator="benchmarks.trace_io") as w:
        w.write_definitions(defs)
        for loc in range(n_locations):
            rec = synthetic_events(per, loc)  # generating is not writing: not timed
            t0 = time.perf_counter()
            w.write_events(loc, rec)
            spent += time.perf_counter() - t0
        t0 = time.perf_counter()
    spent += time.perf_counter() - t0  # the close: index and header patch
    return spent, os.path.getsize(path)


def read_in_subprocess(path: str, verify: bool) -> dict:
    out = subprocess.run(
        [sys.executable, "-c", _READER, path, "1" if verify else "0"],
        capture_output=True, text=True, check=True,
        cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
    )
    return json.loads(out.stdout)


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(prog="python -m benchmarks trace_io", description=__doc__.split("\n\n")[0])
    p.add_argument("--sizes", default="1e6,1e7", help="comma-separated event counts (1e8 needs ~4 GB disk, ~9 GB RAM)")
    p.add_argument("--locations", type=int, default=64)
    p.add_argument("--dir", default=None, help="where to write the files (default: a temporary directory)")
    p.add_argument("--repeat", type=int, default=3, help="reads per configuration; the best is reported")
    args = p.parse_args(argv)
    sizes = [int(float(s)) for s in args.sizes.split(",")]

    rows, loads = [], []
    load_before = os.getloadavg()[0]
    with tempfile.TemporaryDirectory(dir=args.dir) as tmp:
        for n in sizes:
            path = os.path.join(tmp, f"bench_{n}.elg")
            w_sec, size = write_trace(path, n, args.locations)
            n_written = (n // args.locations) * args.locations
            rows.append(("write", n_written, size, w_sec, None, None))
            read_in_subprocess(path, True)  # warm-up: page cache, numba/numpy imports
            for verify in (True, False):
                best = min((read_in_subprocess(path, verify) for _ in range(args.repeat)),
                           key=lambda r: r["seconds"])
                ratio = best["peak"] / best["decoded"] if best["decoded"] else float("nan")
                rows.append((f"read ({'crc' if verify else 'no crc'})", best["events"], size, best["seconds"],
                             best["cpu"], ratio))
                loads.append(best["load"])
            os.unlink(path)

    print(f"trace I/O, {args.locations} locations, {os.cpu_count()} CPUs, "
          f"load average {load_before:.2f} before, {os.getloadavg()[0]:.2f} after")
    print(f"{'operation':<16} {'events':>12} {'file MB':>9} {'seconds':>9} {'Mevents/s':>10} {'MB/s':>9} "
          f"{'cpu s':>7} {'MB/cpu-s':>9} {'peak/decoded':>13}")
    for op, n, size, sec, cpu, ratio in rows:
        r = f"{ratio:13.2f}" if ratio is not None else f"{'':>13}"
        c = f"{cpu:7.3f} {size / cpu / 1e6:9.0f}" if cpu else f"{'':>7} {'':>9}"
        print(f"{op:<16} {n:>12} {size / 1e6:>9.1f} {sec:>9.3f} {n / sec / 1e6:>10.1f} {size / sec / 1e6:>9.0f} {c} {r}")
    if loads:
        print(f"not in the reads above: loading the decoder once per process (numba import, cached kernel) "
              f"{min(loads):.3f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
