"""OTF2 input benchmark: the native reader, whole commands, beside ``otf2-print`` and the same trace as ``.elg``.

    python -m benchmarks otf2 [--sizes 1e6,1e7] [--shapes 2x2,2x1,1x2] [--repeat 3] [--dir DIR]

For each shape (ranks x threads of ``../shared/tools/gen_otf2_synth.py``;
``1x2`` is pure OpenMP, ``2x1`` pure MPI) and size (OTF2 events, the
generator's count) the trace is generated once into DIR (kept for later runs)
and converted to ``.elg`` with ``expert-trace convert``.  Then, each in a
fresh process, best of --repeat by wall-clock time:

* ``otf2-print traces.otf2 > /dev/null`` (Debian's otf2-tools: the OTF2 library in C);
* ``expert-analyze traces.otf2 -q`` and ``expert-analyze x.elg -q`` (whole commands:
  start-up, numba's cached kernels, reading, the analysis, writing the cube);
* the native reader alone on one thread (``otf2_native.open_otf2(path, jobs=1)``, the
  Trace the analysis reads, after the kernels are loaded): OTF2 events per CPU-second of
  the decoding kernel and of the whole read (definitions, fix-ups across locations)
  ("decode M ev/cpu-s"), and the read's peak memory above the process's before it against
  the decoded columns it returns ("read peak / columns").

"ratio" is analyze OTF2 / analyze .elg (target: at most 1.5); "rss" the peak
resident memory of the two analyze commands.  ``--read-only`` measures only
otf2-print and the reader (for traces whose analysis needs more memory than the
machine has).  The machine's load average is printed with the table: other jobs
share the cores and lengthen wall times.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
GENERATOR = ROOT.parent / "shared" / "tools" / "gen_otf2_synth.py"
#: OTF2 events per iteration and fixed ones, per shape (measured from the generator)
SHAPES = {"2x2": (96, 12, ()), "2x1": (40, 12, ()), "1x2": (34, 2, ("--no-mpi",))}

_DECODE = r"""
import json, resource, sys, time
from tracefmt import otf2_kernels, otf2_native
from tracefmt.column_memory import BYTES_PER_EVENT
otf2_native.open_otf2(sys.argv[2], jobs=1)  # load numba and the cached kernels on a small archive
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
kernel, spent = otf2_kernels.decode_location, [0.0]
def timed(*args):
    c = time.process_time()
    out = kernel(*args)
    spent[0] += time.process_time() - c
    return out
otf2_kernels.decode_location = timed
c0, t0 = time.process_time(), time.perf_counter()
t = otf2_native.open_otf2(sys.argv[1], jobs=1)
cpu, wall = time.process_time() - c0, time.perf_counter() - t0
rows = sum(t.n_events(int(l)) for l in t.location_ids)
peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss - before
print(json.dumps({"cpu": cpu, "wall": wall, "rows": rows, "kernel": spent[0], "peak_kib": peak,
                  "columns_kib": rows * BYTES_PER_EVENT / 1024}))
"""


def timed(argv: list[str], repeat: int) -> tuple[float, float]:
    """(best wall seconds, CPU seconds of that run) of a command run `repeat` times."""
    best = None
    for _ in range(repeat):
        r0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        wall = time.perf_counter() - t0
        r1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpu = (r1.ru_utime - r0.ru_utime) + (r1.ru_stime - r0.ru_stime)
        if best is None or wall < best[0]:
            best = (wall, cpu)
    return best


def peak_rss_kib(argv: list[str]) -> int:
    """Peak resident memory (KiB) of one run, measured in a fresh Python parent that runs nothing else."""
    out = subprocess.run([sys.executable, "-c", "import resource, subprocess, sys; subprocess.run(sys.argv[1:], "
                          "stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL); "
                          "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)", *argv],
                         check=True, capture_output=True, text=True)
    return int(out.stdout.split()[-1])


def _f(v: float, digits: int = 2) -> str:
    return "n/a" if v != v else f"{v:.{digits}f}"


def _s(wall: float, cpu: float) -> str:
    return "n/a" if wall != wall else f"{wall:.2f} ({cpu:.2f})"


def ensure_trace(root: Path, shape: str, events: int, elg: bool = True) -> tuple[Path, Path, int]:
    """(anchor, .elg, OTF2 event count) of the shape's trace of about `events` events, made once."""
    per, fixed, extra = SHAPES[shape]
    ranks, threads = shape.split("x")
    iterations = max(1, round((events - fixed) / per))
    out = root / f"{shape}-{iterations}"
    if not (out / "synth_expected.json").is_file():
        subprocess.run([sys.executable, str(GENERATOR), ranks, threads, str(iterations), str(out), *extra, "--force"],
                       check=True, stdout=subprocess.DEVNULL)
    elg_path = root / f"{shape}-{iterations}.elg"
    if elg and not elg_path.is_file():
        subprocess.run(["expert-trace", "convert", str(out / "traces.otf2"), str(elg_path), "--to", "elg"],
                       check=True, stdout=subprocess.DEVNULL)
    n = json.loads((out / "synth_expected.json").read_text())["events"]
    return out / "traces.otf2", elg_path, n


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks otf2", description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", default="1e6,1e7", help="OTF2 events per trace, comma-separated (default 1e6,1e7)")
    ap.add_argument("--shapes", default="2x2,2x1,1x2", help=f"of {', '.join(SHAPES)} (default all)")
    ap.add_argument("--repeat", type=int, default=3, help="runs per command; the best is reported (default 3)")
    ap.add_argument("--read-only", action="store_true", help="only otf2-print and the reader (no analysis)")
    ap.add_argument("--dir", default=os.path.join(tempfile.gettempdir(), "expert-bench-otf2"),
                    help="where the traces are generated and kept (default: %(default)s)")
    args = ap.parse_args(argv)
    if not GENERATOR.is_file():
        print(f"{GENERATOR} is missing (../shared beside the repository)", file=sys.stderr)
        return 2
    root = Path(args.dir)
    root.mkdir(parents=True, exist_ok=True)
    small, _, _ = ensure_trace(root, "2x2", 1000)
    bin_dir = Path(sys.executable).parent
    analyze = [str(bin_dir / "expert-analyze")]
    rows = []
    for size in (int(float(s)) for s in args.sizes.split(",")):
        for shape in args.shapes.split(","):
            anchor, elg, n = ensure_trace(root, shape, size, elg=not args.read_only)
            pr_wall, _ = timed(["otf2-print", str(anchor)], args.repeat)
            a_wall = a_cpu = e_wall = e_cpu = a_rss = e_rss = float("nan")
            if not args.read_only:
                a_wall, a_cpu = timed(analyze + [str(anchor), "-q", "-o", str(root / "o.cubex")], args.repeat)
                e_wall, e_cpu = timed(analyze + [str(elg), "-q", "-o", str(root / "e.cubex")], args.repeat)
                a_rss = peak_rss_kib(analyze + [str(anchor), "-q", "-o", str(root / "o.cubex")]) / 1024
                e_rss = peak_rss_kib(analyze + [str(elg), "-q", "-o", str(root / "e.cubex")]) / 1024
            dec = json.loads(subprocess.run([sys.executable, "-c", _DECODE, str(anchor), str(small)], check=True,
                                            capture_output=True, text=True).stdout)
            rows.append((f"{shape}", n, pr_wall, a_wall, a_cpu, e_wall, e_cpu, a_wall / e_wall,
                         n / dec["kernel"] / 1e6, n / dec["cpu"] / 1e6, dec["peak_kib"] / dec["columns_kib"],
                         a_rss, e_rss))
            print(f"  done {shape} {n} events", file=sys.stderr)
    print(f"load average {os.getloadavg()[0]:.1f} (cores: {os.cpu_count()}); best of {args.repeat}; wall s (cpu s)")
    print("| shape | OTF2 events | otf2-print | analyze .otf2 | analyze .elg | ratio "
          "| decode M ev/cpu-s: kernel / read | read peak / columns | rss .otf2 / .elg MB |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|---:|")
    for shape, n, pr, a, ac, e, ec, ratio, krate, rate, peak, ar, er in rows:
        print(f"| {shape} | {n:,} | {pr:.2f} | {_s(a, ac)} | {_s(e, ec)} | {_f(ratio)} "
              f"| {krate:.1f} / {rate:.1f} | {peak:.2f} | {_f(ar, 0)} / {_f(er, 0)} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
