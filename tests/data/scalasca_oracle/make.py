"""Re-make the Scalasca 2.6 oracle data of this folder (not a test; needs the oracle build and mpirun).

    python tests/data/scalasca_oracle/make.py ORACLE_BIN WORKDIR

ORACLE_BIN: the ``bin`` folder of ``../shared/oracles/build-scalasca.sh DEST`` (scout.mpi, scout.omp,
scout.hyb).  For every trace of :data:`TRACES` it writes the OTF2 archive into WORKDIR, runs the
matching scout on it with as many MPI ranks (and OpenMP threads) as the trace has, reads
``scout.cubex`` (``analyzer.cube.read_cubex``) and writes ``NAME.json`` here: the per-metric totals
and every non-zero (call path, rank, thread) value of the critical-path and delay metrics.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
sys.path[:0] = [REPO, os.path.join(REPO, "tests", "patterns")]
SHARED = os.path.join(os.path.dirname(REPO), "shared")
GEN = os.path.join(SHARED, "tools", "gen_otf2_synth.py")

#: name -> (how the trace is made, ranks, threads)
TRACES = {
    "mpi_4x1_s3": (("gen", ["4", "1", "30", "--seed", "3"]), 4, 1),
    "mpi_3x1_s4": (("gen", ["3", "1", "25", "--seed", "4"]), 3, 1),
    "omp_1x4_s5": (("gen", ["1", "4", "30", "--no-mpi", "--seed", "5"]), 1, 4),
    "hyb_2x2_s7": (("gen", ["2", "2", "200", "--seed", "7"]), 2, 2),
    "hyb_2x2_s8": (("gen", ["2", "2", "40", "--seed", "8"]), 2, 2),
    "hyb_4x4_s11": (("gen", ["4", "4", "15", "--seed", "11"]), 4, 4),
    "pingpong": (("fixture", "fixtures/otf2/pipit-ping-pong"), 2, 1),
    "pingpong_export": (("export", "fixtures/otf2/pipit-ping-pong"), 2, 1),
    "chain_of_waits": (("builder", "chain_of_waits"), 3, 1),
    "ties_and_communicators": (("builder", "ties_and_communicators"), 4, 1),
    "openmp_team": (("builder", "openmp_team"), 1, 2),
}
METRIC_PREFIXES = ("critical_path", "critical_imbalance", "inter_partition", "non_critical", "delay_")


def make_trace(how, out: str) -> str:
    """Write the trace; returns the path of its anchor file."""
    kind, arg = how
    if kind == "gen":
        subprocess.run([sys.executable, GEN, *arg[:3], out, *arg[3:], "--force"], check=True, capture_output=True)
    elif kind == "fixture":
        import shutil

        shutil.copytree(os.path.join(SHARED, arg), out, dirs_exist_ok=True)
    else:  # our own export to OTF2 (expert-trace convert): a builder trace, or a fixture read by our reader
        from tracefmt.cli import main as expert_trace

        if kind == "builder":
            import delay_traces

            src = out + ".elg"
            delay_traces.TRACES[arg]().write(src)
        else:
            src = os.path.join(SHARED, arg, "traces.otf2")
        assert expert_trace(["convert", src, out, "--to", "otf2"]) == 0
    return os.path.join(out, "traces.otf2")


def run_scout(bindir: str, anchor: str, ranks: int, threads: int) -> str:
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
               OMPI_MCA_rmaps_base_oversubscribe="1", OMP_NUM_THREADS=str(threads))
    has_mpi = not anchor.split(os.sep)[-2].startswith(("omp_", "openmp_"))
    exe = os.path.join(bindir, ("scout.hyb" if threads > 1 else "scout.mpi") if has_mpi else "scout.omp")
    cmd = (["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", str(ranks), exe, anchor] if has_mpi
           else [exe, anchor])
    subprocess.run(cmd, check=True, capture_output=True, env=env)
    return os.path.join(os.path.dirname(anchor), "scout.cubex"), os.path.basename(exe), ranks


def extract(cubex: str) -> dict:
    from analyzer.cube import read_cubex

    cube = read_cubex(cubex)
    threads = []  # the thread number of each location: its position within its rank
    for loc in cube.locations:
        threads.append(sum(1 for k in range(len(threads)) if cube.locations[k].rank == loc.rank))
    out = {}
    for name in cube.metric_names:
        if not name.startswith(METRIC_PREFIXES):
            continue
        v = cube.values[name]
        cells = [[cube.callpaths[c], int(cube.locations[l].rank), threads[l], float(v[c, l])]
                 for c, l in zip(*np.nonzero(v))]
        out[name] = {"total": float(v.sum()), "cells": cells}
    return out


def main(bindir: str, work: str) -> None:
    os.makedirs(work, exist_ok=True)
    for name, (how, ranks, threads) in TRACES.items():
        anchor = make_trace(how, os.path.join(work, name))
        cubex, exe, n = run_scout(bindir, anchor, ranks, threads)
        doc = {"trace": {"kind": how[0], "source": how[1], "ranks": ranks, "threads": threads},
               "oracle": f"Scalasca 2.6 {exe}" + (f" on {n} MPI ranks" if exe != "scout.omp" else "")
                         + (f", OMP_NUM_THREADS={threads}" if threads > 1 else ""),
               "metrics": extract(cubex)}
        with open(os.path.join(HERE, name + ".json"), "w") as f:
            json.dump(doc, f, indent=1, sort_keys=True)
        print(name, {k: round(v["total"], 9) for k, v in doc["metrics"].items() if v["total"]})


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2])
