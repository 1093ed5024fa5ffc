"""Tracing-runtime overhead: cost per recorded event, per traced OpenMP barrier and per traced
MPI call (also with EXPERT_UNWIND stack walks) and per traced lock set/unset pair (ns), and the
slowdown of small sample workloads (% of run time).

    python -m benchmarks runtime_overhead [--repeat 5] [--threads 2]

Builds runtime/ (make) and the benchmark kernels in samples/runtime/ (bench_kernels.c,
bench_mpi.c) into a temporary directory, then runs each kernel untraced and under expert-run,
taking the minimum over --repeat runs (this 2-core machine is noisy; the minimum is the least
perturbed run).  Costs are traced minus untraced.  The recorded-event row is measured in the
thread's CPU time, pinned to one core with taskset where it exists.  Prints the load average
before and after: numbers taken under load are not comparable.  Needs clang (OMPT) and Open MPI
(mpicc.openmpi).
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RUNTIME = ROOT / "runtime"
SAMPLES = ROOT / "samples" / "runtime"
EXPERT_RUN = str(RUNTIME / "bin" / "expert-run")
MPI_ENV = {"OMPI_ALLOW_RUN_AS_ROOT": "1", "OMPI_ALLOW_RUN_AS_ROOT_CONFIRM": "1",
           "OMPI_MCA_rmaps_base_oversubscribe": "1"}


def _run(cmd, cwd, env):
    p = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True, timeout=300)
    if p.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd)} failed:\n{p.stdout}\n{p.stderr}")
    return float(p.stdout.strip().splitlines()[-1])


def _best(cmd, cwd, env, repeat):
    return min(_run(cmd, cwd, env) for _ in range(repeat))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks runtime_overhead", description=__doc__.splitlines()[0])
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--threads", type=int, default=2)
    args = ap.parse_args(argv)
    for tool in ("clang", "mpicc.openmpi", "mpirun.openmpi"):
        if not shutil.which(tool):
            print(f"runtime_overhead: {tool} is needed", file=sys.stderr)
            return 2
    subprocess.run(["make", "-s", "-C", str(RUNTIME)], check=True)
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads), **MPI_ENV)
    rows = []
    with tempfile.TemporaryDirectory() as d:
        inc = f"-I{RUNTIME / 'include'}"
        subprocess.run(["clang", "-O2", "-fopenmp", inc, str(SAMPLES / "bench_kernels.c"), "-o", "k"], cwd=d, check=True)
        subprocess.run(["mpicc.openmpi", "-O2", "-fopenmp", str(SAMPLES / "bench_mpi.c"), "-o", "m"], cwd=d, check=True)
        traced = [EXPERT_RUN, "-o", "bench.elg"]
        env1 = dict(env, OMP_NUM_THREADS="1")

        def cost(label, cmd, e, unit_div=1.0):
            base = _best(cmd, d, e, args.repeat)
            pinned = cmd[:3] if cmd[0] == "taskset" else []
            tr = _best(pinned + traced + cmd[len(pinned):], d, e, args.repeat)
            rows.append((label, base / unit_div, tr / unit_div, (tr - base) / unit_div))

        # one core, so the thread does not migrate (its CPU time is what the kernel reports)
        pin = ["taskset", "-c", str(max(os.sched_getaffinity(0)))] if shutil.which("taskset") else []
        print(f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
        cost("recorded event (half an enter/exit pair)", pin + ["./k", "events", "2000000"], env1, 2.0)
        cost("OpenMP barrier, 1 thread", ["./k", "barrier", "200000"], env1)
        cost(f"OpenMP barrier, {args.threads} threads", ["./k", "barrier", "50000"], env)
        # uncontended: with contention the untraced time alone varies 10x run to run on 2 cores
        cost("omp_set_lock + omp_unset_lock, 1 thread", ["./k", "lock", "500000"], env1)
        mpirun = ["mpirun.openmpi", "-np", "2"]
        base = _best(mpirun + ["./m", "calls", "200000"], d, env1, args.repeat)
        tr = _best(mpirun + traced + ["./m", "calls", "200000"], d, env1, args.repeat)
        rows.append(("MPI call (MPI_Iprobe), 2 ranks", base, tr, tr - base))
        # stack walks (EXPERT_UNWIND) at every MPI call: the cost grows with the stack's depth
        # (one rank, pinned, in CPU time: Iprobe is local, and this keeps other processes' turns out)
        mpirun1 = ["mpirun.openmpi", "-np", "1"] + pin
        for depth in (1, 10):
            cmd = ["./m", "deep", "100000", str(depth)]
            base = _best(mpirun1 + cmd, d, env1, args.repeat)
            for method in ("libunwind", "backtrace"):
                tr = _best(mpirun1 + traced + ["--unwind=" + method] + cmd, d, env1, args.repeat)
                rows.append((f"MPI call {depth:2d} deep, 1 rank, --unwind={method}", base, tr, tr - base))

        print(f"{'operation':44s} {'untraced ns':>12s} {'traced ns':>10s} {'cost ns':>9s}")
        for label, b, t, c in rows:
            print(f"{label:44s} {b:12.1f} {t:10.1f} {c:9.1f}")
        print()
        print(f"{'sample workload':44s} {'untraced s':>12s} {'traced s':>10s} {'overhead':>9s}")
        workloads = [
            (f"OpenMP loops ({args.threads} threads, 400 regions)", ["./k", "work", "400"], env),
            (f"hybrid 2 ranks x {args.threads // 2 or 1} threads, 300 iterations",
             mpirun + ["./m", "hybrid", "300"], dict(env, OMP_NUM_THREADS=str(args.threads // 2 or 1))),
        ]
        for label, cmd, e in workloads:
            if cmd[0] == "mpirun.openmpi":
                b = _best(cmd, d, e, args.repeat)
                t = _best(cmd[:3] + traced + cmd[3:], d, e, args.repeat)
            else:
                b = _best(cmd, d, e, args.repeat)
                t = _best(traced + cmd, d, e, args.repeat)
            print(f"{label:44s} {b:12.4f} {t:10.4f} {100 * (t - b) / b:8.1f}%")
        print(f"\nload average after: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
