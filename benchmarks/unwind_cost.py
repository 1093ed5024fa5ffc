"""What call-path unwinding at MPI and OpenMP events (expert-run --unwind) costs on the sample programs.

    python -m benchmarks unwind_cost [--repeat 5] [--keep DIR]

Builds the sample programs (samples/runtime, samples/waits) into a temporary directory and runs each
untraced, traced (expert-run) and traced with --unwind (libunwind), --repeat times each, interleaved,
keeping the minimum wall time of the whole command (launch, run and trace writing: what a user waits
for; the minimum is the least perturbed run on a shared machine) and the minimum CPU time of all its
processes (less sensitive to other processes' load).  Also prints the events and the
size of each trace.  docs/runtime.md ("Call paths for uninstrumented programs") gives the numbers
that decided whether --unwind is the default.  Needs gcc, clang and Open MPI (mpicc.openmpi).
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
EXPERT_RUN = str(ROOT / "runtime" / "bin" / "expert-run")
SAMPLES = ROOT / "samples"
MPI_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
           "OMPI_MCA_rmaps_base_oversubscribe": "1", "OMP_WAIT_POLICY": "passive",
           "OMPI_MCA_mpi_yield_when_idle": "1"}
INC = f"-I{ROOT / 'runtime' / 'include'}"
MPIRUN2 = ["mpirun.openmpi", "-np", "2"]

# name, build command (output "prog"), run command (before and after the place of expert-run), threads
WORKLOADS = [
    ("OpenMP loops, clang -O2 (bench_kernels work 400)",
     ["clang", "-O2", "-g", "-fopenmp", INC, SAMPLES / "runtime" / "bench_kernels.c"], [], ["work", "400"], 2),
    ("hybrid ring + Allreduce, 2 ranks (bench_mpi hybrid 300)",
     ["mpicc.openmpi", "-O2", "-g", "-fopenmp", SAMPLES / "runtime" / "bench_mpi.c"], MPIRUN2, ["hybrid", "300"], 1),
    ("event-dense hybrid, GCC on libomp, 2 x 3 (flush_stress 300)",
     ["mpicc.openmpi", "-O1", "-g", "-fopenmp", "-DWITH_MPI", SAMPLES / "runtime" / "flush_stress.c"], MPIRUN2,
     ["300"], 3),
    ("call-path sample, 2 x 2 (unwind_hybrid)",
     ["mpicc.openmpi", "-O1", "-g", "-fopenmp", "-fno-optimize-sibling-calls", SAMPLES / "runtime" / "unwind_hybrid.c"],
     MPIRUN2, [], 2),
    ("the demo's designed waits, 2 x 2 (hybrid_waits 0.2)",
     ["mpicc.openmpi", "-O1", "-g", "-fopenmp", SAMPLES / "waits" / "hybrid_waits.c"], MPIRUN2, ["0.2"], 2),
]


def measure(cmd, cwd, env) -> tuple[float, float]:
    """(wall seconds, CPU seconds of all processes started) of one run"""
    r0, t0 = resource.getrusage(resource.RUSAGE_CHILDREN), time.perf_counter()
    p = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    t1, r1 = time.perf_counter(), resource.getrusage(resource.RUSAGE_CHILDREN)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(map(str, cmd))} failed:\n{p.stdout}\n{p.stderr}")
    return t1 - t0, (r1.ru_utime + r1.ru_stime) - (r0.ru_utime + r0.ru_stime)


def trace_facts(path: Path) -> tuple[int, int]:
    sys.path.insert(0, str(ROOT))
    import tracefmt
    with tracefmt.open(str(path)) as t:
        return sum(len(t.events(int(loc))) for loc in t.location_ids), path.stat().st_size


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--keep", help="build and trace in this directory (kept)")
    args = ap.parse_args(argv)
    subprocess.run(["make", "-s", "-C", str(ROOT / "runtime")], check=True)
    d = Path(args.keep or tempfile.mkdtemp(prefix="unwind-cost-"))
    d.mkdir(parents=True, exist_ok=True)
    print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(f"{'sample program':62s} {'untraced':>15s} {'traced':>15s} {'--unwind':>15s} {'unwind - traced':>16s}"
          f" {'events':>15s} {'trace MB':>13s}")
    print(f"{'':62s} {'wall/CPU s':>15s} {'wall/CPU s':>15s} {'wall/CPU s':>15s} {'wall/CPU s':>16s}"
          f" {'traced/unwind':>15s} {'traced/unwind':>13s}")
    for i, (label, build, before, after, threads) in enumerate(WORKLOADS):
        prog = f"p{i}"
        subprocess.run([*map(str, build), "-o", prog], cwd=d, check=True)
        env = dict(os.environ, **MPI_ENV, OMP_NUM_THREADS=str(threads))
        runs = {
            "untraced": [*before, f"./{prog}", *after],
            "traced": [*before, EXPERT_RUN, "-o", f"{prog}.elg", f"./{prog}", *after],
            "unwind": [*before, EXPERT_RUN, "--unwind", "-o", f"{prog}u.elg", f"./{prog}", *after],
        }
        best = {k: [float("inf"), float("inf")] for k in runs}
        for _ in range(args.repeat):  # interleaved, so a burst of load hits all three alike
            for k, cmd in runs.items():
                w, c = measure(cmd, d, env)
                best[k] = [min(best[k][0], w), min(best[k][1], c)]
        ev, size = trace_facts(d / f"{prog}.elg")
        evu, sizeu = trace_facts(d / f"{prog}u.elg")
        cell = {k: f"{v[0]:6.3f}/{v[1]:6.3f}" for k, v in best.items()}
        dw, dc = best["unwind"][0] - best["traced"][0], best["unwind"][1] - best["traced"][1]
        print(f"{label:62s} {cell['untraced']:>15s} {cell['traced']:>15s} {cell['unwind']:>15s}"
              f" {dw:+7.3f}/{dc:+7.3f} {ev:7d}/{evu:7d} {size / 1e6:6.2f}/{sizeu / 1e6:6.2f}")
    print(f"load average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
