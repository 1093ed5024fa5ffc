"""Run ``expert-analyze`` in this process and write what one analysis rank cost to a file.

    python -m benchmarks.rank_peak OUT_DIR -- TRACE --mpi -q --json ...   (under mpiexec: one file per rank)

Each rank writes ``OUT_DIR/rank<R>.json`` after the analysis: its rank (Open MPI's or MPICH's
environment; 0 without MPI), the CLI's exit status, its peak RSS (``VmHWM`` of /proc/self/status:
``ru_maxrss`` is also written, but may keep a launcher's peak across the exec), the peak before the
analysis (interpreter, numpy, numba and the replay imported), CPU seconds (user + system) and wall seconds of the analysis,
and the bytes this rank sent to others if the analysis says (see :func:`_traffic`).  Measured inside
the rank because the launcher only sees the largest child, or none.
"""

from __future__ import annotations

import json
import os
import resource
import sys
import time


def hwm_kib() -> int:
    """This process's peak resident set in KiB."""
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


def rank() -> int:
    for var in ("OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK"):
        if os.environ.get(var, "").isdigit():
            return int(os.environ[var])
    return 0


def _cpu() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


def _traffic(sent: list[int], cube) -> dict:
    """Bytes this rank exchanged, from whichever source the analysis offers (None where it offers none):

    * ``analyzer.distributed.network.TRAFFIC`` (or the same name in ``analyzer.distributed.mpi_network``):
      a dict of counters of this process (e.g. ``bytes_sent``, ``bytes_received``, ``messages``);
    * cube attributes whose key starts with ``expert-analyze::mpi::`` and holds ``bytes`` (rank 0);
    * the gather of today's replay (``analyzer.replay.exchange.gather_bytes``): the bytes of this rank's
      share that went to the root (counted by the wrapper installed in :func:`main`).
    """
    out: dict = {}
    for mod in ("analyzer.distributed.mpi_network", "analyzer.distributed.network"):
        counters = getattr(sys.modules.get(mod), "TRAFFIC", None)
        if isinstance(counters, dict) and counters:
            out["counters"] = {str(k): v for k, v in counters.items() if isinstance(v, (int, float))}
            break
    if cube is not None:
        attrs = {k: v for k, v in cube.attrs.items() if k.startswith("expert-analyze::mpi::") and "bytes" in k}
        if attrs:
            out["cube_attrs"] = attrs
    if sent:
        out["gather_bytes_sent"] = int(sum(sent))
    return out


def _count_gathers(sent: list[int]) -> list[tuple]:
    """Count the bytes each call of the gather of the replay before the per-share pipeline (a565062 and
    earlier) sends from a non-root rank (the root keeps its own); returns what to put back."""
    try:
        from analyzer.replay import distributed, exchange
    except ImportError:  # the per-share pipeline: its networks count (TRAFFIC)
        return []
    inner = exchange.gather_bytes

    def counted(comm, payload, root=0, **kw):
        if comm.rank != root:
            sent.append(len(payload))
        return inner(comm, payload, root=root, **kw)

    undo = [(exchange, "gather_bytes", inner)]
    exchange.gather_bytes = counted
    if getattr(distributed, "gather_bytes", None) is inner:
        undo.append((distributed, "gather_bytes", inner))
        distributed.gather_bytes = counted
    return undo


def main(argv: list[str]) -> int:
    if len(argv) < 2 or argv[1] != "--":
        print("usage: python -m benchmarks.rank_peak OUT_DIR -- EXPERT-ANALYZE-ARGS...", file=sys.stderr)
        return 2
    out_dir, cli_args = argv[0], argv[2:]
    import importlib

    from analyzer.cli.analyze import main as cli_main
    import analyzer.replay  # noqa: F401  (numba, numpy and the kernels: in the base, not in the analysis)

    pipeline = importlib.import_module("analyzer.analyze")  # the module (the package exports a function of that name)

    sent: list[int] = []
    undo = _count_gathers(sent)
    cubes = []
    inner = pipeline.analyze
    undo.append((pipeline, "analyze", inner))
    notes: list[str] = []

    def keep_cube(*a, **kw):  # the CLI imports analyze() at call time: this wrapper is what it gets
        cube = inner(*a, **kw)
        cubes.append(cube)
        notes.extend(kw.get("notes") or ())  # what the analysis said of itself (e.g. what spilling cost)
        return cube

    pipeline.analyze = keep_cube
    base = hwm_kib()
    c0, t0 = _cpu(), time.perf_counter()
    try:
        rc = cli_main(cli_args)
    except SystemExit as exc:  # argparse: a bad option
        rc = exc.code if isinstance(exc.code, int) else 2
    finally:
        for module, name, original in undo:
            setattr(module, name, original)
    wall, cpu = time.perf_counter() - t0, _cpu() - c0
    rec = {"rank": rank(), "rc": rc, "peak_kib": hwm_kib(), "base_kib": base,
           "maxrss_kib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss, "cpu_s": cpu, "wall_s": wall,
           "traffic": _traffic(sent, cubes[0] if cubes else None), "notes": [str(n) for n in notes]}
    os.makedirs(out_dir, exist_ok=True)
    with open(os.path.join(out_dir, f"rank{rec['rank']}.json"), "w") as f:
        json.dump(rec, f)
    return rc or 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
