#!/usr/bin/env python3
"""Record what Scalasca 2.6 says about our OTF2 export of the committed runtime traces.

Run from the repository root with the project's virtual environment active and
``runtime/bin`` on PATH (README.md in this folder says exactly how):

    python tests/data/scalasca_export/record.py            # re-trace every sample, then record
    python tests/data/scalasca_export/record.py --keep     # keep the committed .elg traces, record again
    python tests/data/scalasca_export/record.py --keep hybrid_2x2   # one trace

For every trace NAME.elg here: ``tracefmt.otf2_out.write_otf2`` exports it to a
scratch directory, the matching ``scout`` (``scout.ser``, ``scout.omp``,
``scout.mpi`` under ``mpirun -np P``, ``scout.hyb`` under ``mpirun -np P``)
analyses the export, and every non-zero value of its ``scout.cubex`` is written
to NAME.json: per metric, per call path (region names joined by ``/``), one
value per location in the order of ``locations`` ([rank, thread] pairs);
``metric_names`` lists every metric of the cube (those left out of ``metrics``
are zero everywhere).
Values follow ``analyzer.cube`` conventions: inclusive along the metric tree,
exclusive along the call tree.  Cnodes sharing a path string are summed.

The tests never run this; they only read the JSON (no Scalasca needed).
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
sys.path.insert(0, str(ROOT))

import tracefmt  # noqa: E402
from analyzer.cube import read_cubex  # noqa: E402
from tracefmt import otf2_out  # noqa: E402
from tracefmt.layout import Paradigm  # noqa: E402

SAMPLES = ROOT / "samples" / "runtime"
SCOUT_BIN = Path(os.environ.get("SCOUT_BIN", "/work/oracle-build/bin"))
MPI_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
           "OMPI_MCA_rmaps_base_oversubscribe": "1"}
MPIRUN = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np"]
INC = f"-I{ROOT / 'runtime' / 'include'}"

# name -> (build command, trace command); {src} is the sample, the trace is written to {out}
TRACES = {
    "omp_constructs": (["clang", "-fopenmp", "-g", "-O1", "{src}/omp_constructs.c", "-o", "{exe}"],
                       ["expert-run", "-o", "{out}", "./{exe}"]),
    "omp_nowait_end": (["clang", "-fopenmp", "-g", "-O1", "{src}/omp_nowait_end.c", "-o", "{exe}"],
                       ["expert-run", "-o", "{out}", "./{exe}"]),
    "omp_test_locks": (["clang", "-fopenmp", "-g", "-O1", "{src}/omp_test_locks.c", "-o", "{exe}"],
                       ["expert-run", "-o", "{out}", "./{exe}"]),
    "lock_stress_20": (["clang", "-fopenmp", "-g", "-O1", "{src}/lock_stress.c", "-o", "{exe}"],
                       ["expert-run", "-o", "{out}", "./{exe}", "20"]),
    "user_functions": (["gcc", "-O0", "-g", "-finstrument-functions", INC, "{src}/user_functions.c", "-o", "{exe}"],
                       ["expert-run", "-o", "{out}", "./{exe}"]),
    "ring_4": (["mpif90", "-g", "{src}/ring.f90", "-o", "{exe}"],
               MPIRUN + ["4", "expert-run", "-o", "{out}", "./{exe}"]),
    "fcolls_4": (["mpif90", "-g", "{src}/fcolls.f90", "-o", "{exe}"],
                 MPIRUN + ["4", "expert-run", "-o", "{out}", "./{exe}"]),
    "nonblocking_3": (["mpicc", "-g", "{src}/nonblocking.c", "-o", "{exe}"],
                      MPIRUN + ["3", "expert-run", "-o", "{out}", "./{exe}"]),
    "hybrid_2x2": (["mpicc", "-fopenmp", "-g", "-O1", "{src}/hybrid.c", "-o", "{exe}"],
                   MPIRUN + ["2", "-x", "OMP_NUM_THREADS=2", "expert-run", "-o", "{out}", "./{exe}"]),
    "unwind_hybrid_2x2": (["mpicc", "-fopenmp", "-g", "-O1", "-fno-optimize-sibling-calls",
                           "{src}/unwind_hybrid.c", "-o", "{exe}"],
                          MPIRUN + ["2", "-x", "OMP_NUM_THREADS=2", "expert-run", "--unwind", "-o", "{out}",
                                    "./{exe}"]),
}


def run(cmd, cwd, env=None):
    p = subprocess.run(cmd, cwd=cwd, env=dict(os.environ, **(env or {})), capture_output=True, text=True,
                       timeout=300)
    if p.returncode != 0:
        raise SystemExit(f"{' '.join(map(str, cmd))} failed ({p.returncode}):\n{p.stdout}\n{p.stderr}")
    return p


def trace_sample(name: str, work: Path) -> None:
    build, trace = TRACES[name]
    d = work / name
    d.mkdir()
    exe = next(Path(a).stem for a in build if a.startswith("{src}/"))  # the root region is named after it
    run([a.format(src=SAMPLES, exe=exe) for a in build], d)
    run([a.format(out=HERE / f"{name}.elg", exe=exe) for a in trace], d, MPI_ENV)


def scout_command(trace) -> list[str]:
    """The scout variant that matches the trace, as Scalasca's own `scalasca -analyze` would pick it."""
    locs = list(trace.defs.locations.values())
    procs = sorted({L.process for L in locs})
    threads = max(sum(1 for m in locs if m.process == p) for p in procs)
    mpi = any(r.paradigm == Paradigm.MPI for r in trace.defs.regions.values())
    if mpi:
        return MPIRUN + [str(len(procs)), str(SCOUT_BIN / ("scout.hyb" if threads > 1 else "scout.mpi"))]
    return [str(SCOUT_BIN / ("scout.omp" if threads > 1 else "scout.ser"))]


def cube_values(cube) -> tuple[list[list[int]], dict]:
    locations = [[int(L.rank), int(L.thread)] for L in cube.locations]
    metrics = {}
    paths = cube.callpaths
    for m in cube.metric_names:
        v = cube.values[m]
        per_path: dict[str, list[float]] = {}
        for cn, path in enumerate(paths):
            row = v[cn]
            if not row.any():
                continue
            acc = per_path.setdefault(path, [0.0] * len(locations))
            for j, x in enumerate(row.tolist()):
                acc[j] += x
        if per_path:
            metrics[m] = per_path
    return locations, metrics


def _dumps(doc: dict) -> str:
    """JSON with one line per call path (diffs of a re-recording stay readable)."""
    lines = ["{"] + [f" {json.dumps(k)}: {json.dumps(v)}," for k, v in doc.items() if k != "metrics"]
    lines.append(' "metrics": {')
    for i, (m, paths) in enumerate(doc["metrics"].items()):
        lines.append(f"  {json.dumps(m)}: {{")
        for j, (path, vals) in enumerate(paths.items()):
            lines.append(f"   {json.dumps(path)}: {json.dumps(vals)}" + ("," if j < len(paths) - 1 else ""))
        lines.append("  }" + ("," if i < len(doc["metrics"]) - 1 else ""))
    lines.append(" }\n}\n")
    return "\n".join(lines)


def record(name: str, work: Path) -> None:
    elg = HERE / f"{name}.elg"
    trace = tracefmt.open(elg)
    exp = work / f"{name}_otf2"
    notes = otf2_out.write_otf2(trace, exp, force=True)
    cmd = scout_command(trace) + [str(exp / "traces.otf2")]
    p = run(cmd, work, MPI_ENV)
    version = next((ln.strip() for ln in p.stdout.splitlines() if ln.strip().startswith("SCOUT")), "")
    cube = read_cubex(exp / "scout.cubex")
    locations, metrics = cube_values(cube)
    shown = [Path(c).name if c.startswith("/") else c for c in cmd[:-1]] + [f"{name}_otf2/traces.otf2"]
    doc = {
        "trace": elg.name,
        "exported_by": "tracefmt.otf2_out.write_otf2",
        "export_notes": notes,
        "scalasca": version,
        "command": " ".join(shown),
        "locations": locations,
        "metric_names": list(cube.metric_names),
        "metrics": metrics,
    }
    (HERE / f"{name}.json").write_text(_dumps(doc))
    print(f"{name}: {len(locations)} locations, {len(metrics)} non-zero metrics ({' '.join(shown)})")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("names", nargs="*", help=f"traces to record (default: all of {', '.join(TRACES)})")
    ap.add_argument("--keep", action="store_true", help="keep the committed .elg traces; only re-run Scalasca")
    a = ap.parse_args(argv)
    names = a.names or list(TRACES)
    with tempfile.TemporaryDirectory(prefix="scalasca_export_") as tmp:
        work = Path(tmp)
        for name in names:
            if not a.keep:
                trace_sample(name, work)
            record(name, work)
        shutil.rmtree(work, ignore_errors=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
