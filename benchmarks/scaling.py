"""Distributed analysis, measured per rank: ``python -m benchmarks scaling``.

Runs ``mpiexec -n K expert-analyze --mpi TRACE`` for each K (Open MPI, oversubscribed, one numba
thread per rank) and, as the reference, the serial analysis of the same trace; each process measures
itself (``benchmarks/rank_peak.py``).  One table row per (pattern set, mode):

* wall s: launch to exit of the whole command (startup of K interpreters included), and the slowest
  rank's analysis alone;
* cpu s: CPU time (user + system) of the analysis summed over the ranks (the number to compare on a
  loaded machine);
* peak RSS of rank 0, of the largest other rank, and summed over all ranks;
* bytes exchanged, summed over the ranks, where the analysis says (rank_peak's hooks), else n/a;
* same: whether the JSON summary equals the serial one byte for byte.

``--memory LIMIT,...`` adds serial runs of ``expert-analyze --memory LIMIT`` (n/a while the CLI has no
such option) with their peak and the cost of spilling (CPU with / without the limit).  ``--tables``
measures each compound-event table of the trace (rows per event, bytes per row) in a serial analysis,
``--model`` prints the analytic model of docs/performance.md ("Distributed analysis: scaling") against
the measured points and evaluated at ``--model-at`` (default 10^10 events over 1024 ranks).

    python -m benchmarks scaling [--trace PATH | --sizes 1e7,1e8 [--shape 8x4]] [--ranks 1,2,4,8,16]
                                 [--patterns all,core] [--memory 400M,...] [--tables] [--model] [--json FILE]
                                 [--no-serial] [--constants EARLIER.json] [--again EARLIER.json]

``--no-serial`` leaves out the serial reference (a trace whose serial analysis does not fit);
``--constants`` takes the model's constants from an earlier report of a smaller trace of the same shape
(the model extrapolated); ``--again`` prints the table and model of an earlier report without measuring.
The generator of ``benchmarks/analysis.py`` keeps its times consistent up to 8 processes per trace.

Pattern sets: ``all`` (every built-in pattern) and ``core`` (all but delay, critical path and POP,
whose whole-trace tables stay on rank 0 in the distributed analysis).  A run is skipped, and the table
says so, when less than ``--min-free`` GB of memory is available before it starts.
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time

from .analysis import SCALASCA2, build_trace

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
#: pattern sets by name: the modules left out (None: every built-in pattern)
PATTERN_SETS = {"all": (), "core": SCALASCA2}
#: where the model is evaluated by default: events, ranks, locations, call paths, crossing fraction
MODEL_AT = (1e10, 1024, 16384, 1000, 0.25)


# ---------------------------------------------------------------- running


def parse_sizes(text: str) -> list[int]:
    """``"1e7,1e8"`` -> [10000000, 100000000]."""
    out = []
    for s in filter(None, (p.strip() for p in text.split(","))):
        n = int(float(s))
        if n <= 0:
            raise ValueError(f"event count must be positive: {s!r}")
        out.append(n)
    return out


def parse_ints(text: str) -> list[int]:
    out = [int(s) for s in text.split(",") if s.strip()]
    if any(k < 1 for k in out):
        raise ValueError(f"rank counts must be positive: {text!r}")
    return out


def pattern_names(set_name: str) -> list[str] | None:
    """The ``--patterns`` list of a pattern set (None: every built-in pattern, no option needed)."""
    if set_name not in PATTERN_SETS:
        raise ValueError(f"unknown pattern set {set_name!r}; sets: {', '.join(PATTERN_SETS)}")
    without = PATTERN_SETS[set_name]
    if not without:
        return None
    from analyzer.analyze import select_patterns

    return [p.name for p in select_patterns(None, plugins=False) if type(p).__module__ not in without]


def _env() -> dict:
    # one thread per process: K is the only parallelism; mpi4py bound to Open MPI as in tests/analyzer
    return dict(os.environ, PYTHONPATH=ROOT, NUMBA_NUM_THREADS="1", OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1",
                MKL_NUM_THREADS="1", OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1",
                OMPI_MCA_btl="self,vader", OMPI_MCA_rmaps_base_oversubscribe="1", MPI4PY_MPIABI="openmpi")


def mem_available_gb() -> float:
    try:
        with open("/proc/meminfo") as f:
            for line in f:
                if line.startswith("MemAvailable:"):
                    return int(line.split()[1]) / 2**20
    except OSError:
        pass
    return float("inf")


def cli_has_option(option: str) -> bool:
    """Whether ``expert-analyze --help`` lists ``option``."""
    r = subprocess.run([sys.executable, "-m", "analyzer.cli", "--help"], capture_output=True, text=True, env=_env(),
                       cwd=ROOT)
    return option in r.stdout


def summarize(ranks: list[dict]) -> dict:
    """One row's numbers from the per-rank records of rank_peak (any order)."""
    ranks = sorted(ranks, key=lambda r: r["rank"])
    r0 = ranks[0]
    others = ranks[1:]
    big = max(others, key=lambda r: r["peak_kib"]) if others else None
    sent = []
    for r in ranks:
        t = r.get("traffic") or {}
        c = t.get("counters") or {}
        if "bytes_sent" in c:
            sent.append(int(c["bytes_sent"]))
        elif "gather_bytes_sent" in t:
            sent.append(int(t["gather_bytes_sent"]))
    attrs = (r0.get("traffic") or {}).get("cube_attrs") or {}
    exchanged = sum(sent) if sent else None
    if exchanged is None and attrs:  # the analysis's own count, on rank 0
        try:
            exchanged = int(sum(float(v) for k, v in attrs.items() if "sent" in k or "exchanged" in k))
        except ValueError:
            exchanged = None
    return {
        "ranks": len(ranks),
        "rank_wall_s": max(r["wall_s"] for r in ranks),
        "cpu_s": sum(r["cpu_s"] for r in ranks),
        "rank0_peak_mb": r0["peak_kib"] / 1024,
        "other_peak_mb": big["peak_kib"] / 1024 if big else None,
        "other_rank": big["rank"] if big else None,
        "sum_peak_mb": sum(r["peak_kib"] for r in ranks) / 1024,
        "base_mb": r0["base_kib"] / 1024,
        "bytes_exchanged": exchanged,
        "notes": r0.get("notes") or [],
        "per_rank": [{k: r.get(k) for k in ("rank", "peak_kib", "cpu_s", "wall_s", "traffic")} for r in ranks],
    }


def run_analysis(trace: str, k: int, names: list[str] | None, extra: list[str] = (), mpi: bool = True,
                 timeout: float = 1800) -> dict:
    """One analysis (``mpi``: K ranks under mpiexec; else one serial process) and its summary row."""
    work = tempfile.mkdtemp(prefix="scaling-", dir=os.environ.get("TMPDIR"))
    try:
        cli = [trace, "-q", "--no-progress", "--no-plugins", "--json", os.path.join(work, "out.json"),
               "-o", os.path.join(work, "out.cubex"), *extra]
        if names is not None:
            cli += ["--patterns", ",".join(names)]
        cmd = [sys.executable, "-m", "benchmarks.rank_peak", os.path.join(work, "ranks"), "--"]
        if mpi:
            mpiexec = shutil.which("mpiexec.openmpi") or shutil.which("mpiexec")
            if mpiexec is None:
                raise SystemExit("scaling benchmark: --mpi runs need mpiexec (Open MPI)")
            cmd = [mpiexec, "--oversubscribe", "-n", str(k), *cmd, "--mpi", *cli]
        else:
            cmd = [*cmd, "-j", "1", *cli]
        c0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        out = subprocess.run(cmd, capture_output=True, text=True, env=_env(), cwd=ROOT, timeout=timeout)
        wall = time.perf_counter() - t0
        c1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        if out.returncode != 0:  # the analysis's own error line, not mpiexec's banner after it
            lines = (out.stderr or out.stdout).strip().splitlines()
            why = next((l for l in lines if "error" in l.lower() and "mpiexec" not in l), lines[-1] if lines else "")
            return {"error": f"exit {out.returncode}: {why.strip()}"}
        rdir = os.path.join(work, "ranks")
        recs = [json.load(open(os.path.join(rdir, f))) for f in sorted(os.listdir(rdir))]
        if len(recs) != (k if mpi else 1):
            return {"error": f"{len(recs)} rank records for {k} ranks"}
        row = summarize(recs)
        row["wall_s"] = wall
        row["cpu_total_s"] = (c1.ru_utime + c1.ru_stime) - (c0.ru_utime + c0.ru_stime)  # startup included
        with open(os.path.join(work, "out.json"), "rb") as f:
            row["json"] = f.read()
        return row
    finally:
        shutil.rmtree(work, ignore_errors=True)


_TABLES = """
import json, sys
from analyzer.analyze import analyze
from benchmarks.rank_peak import hwm_kib
base = hwm_kib()
cube = analyze(sys.argv[1], patterns=None, plugins=False, jobs=1)
ctx = cube.context
E = int(cube.attrs["expert-analyze::events"])
out = {"events": E, "locations": int(ctx.n_locations), "callpaths": int(ctx.visits.shape[0]),
       "metrics": len(cube.metrics), "base_kib": base, "peak_kib": hwm_kib(), "tables": {}}
for name, t in sorted(ctx.tables.items()):
    n = len(t)
    row = sum(col.dtype.itemsize for col in t.values())
    send = sum(col.dtype.itemsize for c, col in t.items() if c.startswith("send_"))
    out["tables"][name] = {"rows": n, "bytes_per_row": row, "rows_per_event": n / E, "send_side_bytes": send,
                           "columns": len(t.columns())}
print(json.dumps(out))
"""


def measure_tables(trace: str) -> dict:
    """Rows per event and bytes per row of every table of a serial analysis of ``trace`` (all patterns)."""
    out = subprocess.run([sys.executable, "-c", _TABLES, trace], capture_output=True, text=True, env=_env(),
                         cwd=ROOT)
    if out.returncode != 0:
        raise SystemExit(f"scaling benchmark: table measurement failed:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


# ---------------------------------------------------------------- the model

#: candidate rows per collective instance and share, and as many winners back (upper bound: max enter of
#: all and of the senders, min exit of all and of the senders that receive, root, min enter of the sending
#: non-roots, min and max region id)
COLL_CANDIDATES = 8
#: bytes per event today's --mpi gather sent to rank 0 (10^7-event benchmark trace, all patterns,
#: docs/performance.md): the fallback's volume when no gather was measured in the same run
G_GATHER = 41.6
#: [C, L] arrays of 8 bytes every share context holds whole (global L): visits, excl, incl, and the one
#: pattern result being computed (each cut to the owned columns as soon as computed)
DENSE_PER_SHARE = 4
#: bytes per call-tree node a share sends to every other share (parent, region, callsite: builder arrays)
TREE_NODE = 24
#: POP's ideal replay by shares (analyzer/distributed/share_pop.py): instances with at most this many member
#: shares exchange their arrival reports directly (m (m - 1) per instance), wider ones through the instance's
#: owner (2 (m - 1))
POP_DIRECT_SHARES = 8


def model_constants(tables: dict, m0_bytes: float, serial: dict[str, dict], two: dict[str, dict],
                    processes: int, pipeline: str = "gather", e0_two: float | None = None,
                    four: dict[str, dict] | None = None, e0_four: float | None = None) -> dict:
    """The model's constants, from runs on one trace of ``tables['events']`` events.

    ``m0_bytes``: peak of a serial analysis of a trace 1/100 the size (interpreter, kernels loaded);
    ``serial``: pattern set -> summary row of the serial analysis; ``two``: pattern set -> the ``--mpi``
    row with 2 ranks, where measured, and ``e0_two`` the events of rank 0's share there (default E/2).
    From those rows: today's gather (``pipeline`` "gather"): bytes per event sent (g) and a walking rank's
    bytes per event (w); the per-share pipeline: the collective rows per instance and share that travel
    (c, core set) and the fallback's bytes per event (g_fb: all minus core); where the ``--mpi`` rows with 4
    ranks (``four``, rank 0's share ``e0_four`` events) are there too, the root-cause analysis by shares
    (all minus core at K = 2 and 4): a rank's extra peak rc_M0 + rc_m e, the exchange rc_x E plus rc_r bytes
    per POP arrival report (I instances, each with m (m - 1) reports while direct).
    """
    E = tables["events"]
    e1 = E - (E / 2 if e0_two is None else e0_two)  # events outside rank 0's share at K = 2
    c = {
        "E0": E, "L0": tables["locations"], "C0": tables["callpaths"], "P0": processes, "metrics": tables["metrics"],
        "M0": m0_bytes, "sets": {},
        "rows": {n: t["rows_per_event"] for n, t in tables["tables"].items()},
        "bytes": {n: t["bytes_per_row"] for n, t in tables["tables"].items()},
        # what a routed send carries: the send-side columns and its matching key (dest, tag, comm, seq)
        "send_bytes": tables["tables"].get("messages", {}).get("send_side_bytes", 0) + 16,
    }
    for name, row in serial.items():
        k = {"m": max(0.0, (row["rank0_peak_mb"] * 2**20 - m0_bytes) / E)}  # serial bytes per event
        t = two.get(name)
        if pipeline == "gather" and t and t.get("bytes_exchanged") and e1 > 0:
            k["g"] = t["bytes_exchanged"] / e1
        if pipeline == "gather" and t and t.get("other_peak_mb") is not None and e1 > 0:
            k["w"] = max(0.0, (t["other_peak_mb"] * 2**20 - m0_bytes) / e1)
        c["sets"][name] = k
    if pipeline == "share":
        core, full = two.get("core"), two.get("all")
        if core and core.get("bytes_exchanged") is not None:
            rest = model_share(dict(c, c_coll=0.0), E, 2, f=crossing(2, processes))["exchanged"]
            per = model_share(dict(c, c_coll=1.0), E, 2, f=crossing(2, processes))["exchanged"] - rest
            if per > 0:
                c["c_coll"] = max(0.0, (core["bytes_exchanged"] - rest) / per)
        if core and full and core.get("bytes_exchanged") is not None and full.get("bytes_exchanged") and e1 > 0:
            c["g_fb"] = max(0.0, (full["bytes_exchanged"] - core["bytes_exchanged"]) / e1)
        core4, full4 = (four or {}).get("core"), (four or {}).get("all")
        if core and full and core4 and full4:
            e2 = E / 2 if e0_two is None else e0_two
            e4 = E / 4 if e0_four is None else e0_four
            d2 = (full["rank0_peak_mb"] - core["rank0_peak_mb"]) * 2**20
            d4 = (full4["rank0_peak_mb"] - core4["rank0_peak_mb"]) * 2**20
            c["rc_m"] = max(0.0, (d2 - d4) / (e2 - e4)) if e2 != e4 else 0.0
            c["rc_M0"] = max(0.0, d2 - c["rc_m"] * e2)
            x2 = full["bytes_exchanged"] - core["bytes_exchanged"]
            x4 = full4["bytes_exchanged"] - core4["bytes_exchanged"]
            inst = c["rows"].get("collectives", 0.0) * E / processes  # each spans every process here
            m2, m4 = min(2, processes), min(4, processes)
            per = inst * (_reports(m4) - _reports(m2))
            c["rc_r"] = max(0.0, (x4 - x2) / per) if per > 0 else 0.0
            c["rc_x"] = max(0.0, (x2 - inst * _reports(m2) * c["rc_r"]) / E)
    return c


def _reports(m: float) -> float:
    """POP arrival reports and results per collective instance with ``m`` member shares."""
    return m * (m - 1) if m <= POP_DIRECT_SHARES else 2 * (m - 1)


def model_gather(c: dict, s: str, E: float, K: int, e0: float | None = None, emax: float | None = None) -> dict:
    """Today's ``--mpi`` (every share pickled and gathered to rank 0) for pattern set ``s``: per-rank peak
    and bytes sent to rank 0.  ``e0``, ``emax``: events of rank 0's share and of the largest other share
    (default: E/K' each, K' = min(K, processes)).

    Rank 0 holds every share's pickled bytes (its own included) and then the serial analysis:
    M0 + (m + g) E, whatever K.  Another rank walks its share's e events and pickles them: M0 + w e.
    Sent: g (E - e0).
    """
    k = c["sets"][s]
    g, w = k.get("g", G_GATHER), k.get("w", k["m"] + k.get("g", G_GATHER))
    ke = min(K, c["P0"])
    e0 = E / ke if e0 is None else e0
    emax = E / ke if emax is None else emax
    return {"rank0": c["M0"] + (k["m"] + g) * E, "other": c["M0"] + w * emax if K > 1 else None,
            "exchanged": g * (E - e0) if K > 1 else 0.0}


def model_share(c: dict, E: float, K: int, L: float | None = None, C: float | None = None, f: float = 0.25,
                global_patterns: bool = False, e0: float | None = None, emax: float | None = None) -> dict:
    """The analysis per share of whole processes (issue 17's design, analyzer/distributed): per-rank peak
    and exchange volume.  ``e0``, ``emax``: events of rank 0's share and of the largest other share
    (default E/K', K' = min(K, P)).

    P = processes (as many threads each as measured).  A rank whose share has e events, bytes:
    M0 + m_core e (walk, tables and location patterns at the serial slope without delay/critical
    path/POP) + the message halo f r_msg e b_msg + the collective rows it reduces and gets back
    (2 c b_coll per collective instance) + every RMA row (allgather) + DENSE_PER_SHARE C L 8 + the call
    trees of all shares K TREE_NODE C.  Rank 0 also holds the full results, metrics C L 8; with the
    global patterns it holds what the serial analysis holds, M0 + m_all E, instead of its share, and
    every other rank also the fallback's payload g_fb e.
    Exchange, summed over ranks: routed sends and halo rows f r_msg E (b_send + b_msg); collectives
    2 c b_coll per (instance, share with a member), instances = r_coll E / P (each spans every process,
    as in the benchmark trace); RMA (K-1) r_rma E b_rma; trees K (K-1) C TREE_NODE; the owned result
    blocks to rank 0 metrics C L 8 (K-1)/K; and separately the fallback g_fb (E - e0).
    c: measured (``c_coll``, fitted at K = 2) or the upper bound COLL_CANDIDATES.
    """
    L = c["L0"] if L is None else L
    C = c["C0"] if C is None else C
    sets = c["sets"]
    m_core = sets.get("core", sets.get("all"))["m"]
    m_all = sets.get("all", sets.get("core"))["m"]
    cc = c.get("c_coll", COLL_CANDIDATES)
    rows, nbytes = c["rows"], c["bytes"]
    r_msg, b_msg = rows.get("messages", 0.0), nbytes.get("messages", 0)
    r_coll, b_coll = rows.get("collectives", 0.0), nbytes.get("collectives", 0)
    r_rma, b_rma = rows.get("mpi_rma_ops", 0.0), nbytes.get("mpi_rma_ops", 0)
    procs = max(1.0, c["P0"] * L / c["L0"])
    ke = min(K, procs)
    e0 = E / ke if e0 is None else e0
    emax = E / ke if emax is None else emax
    inst = r_coll * E / procs
    coll_total = 2 * cc * b_coll * inst * ke if K > 1 else 0.0
    msg_total = f * r_msg * E * (c["send_bytes"] + b_msg) if K > 1 else 0.0
    rma_total = (K - 1) * r_rma * E * b_rma
    tree_total = K * (K - 1) * C * TREE_NODE
    blocks_total = c["metrics"] * C * L * 8 * (K - 1) / K
    parts = {"messages": msg_total, "collectives": coll_total, "rma": rma_total, "trees": tree_total,
             "result_blocks": blocks_total}
    fixed = (2 * cc * b_coll * inst if K > 1 else 0.0) + r_rma * E * b_rma + DENSE_PER_SHARE * C * L * 8 \
        + K * C * TREE_NODE

    def rank(e):
        return c["M0"] + m_core * e + f * r_msg * e * b_msg + fixed

    results = c["metrics"] * C * L * 8
    rank0 = rank(e0) + results
    fallback, g_fb = 0.0, 0.0
    other = rank(emax) if K > 1 else None
    if global_patterns and "rc_m" in c:  # the root-cause analysis by shares (share_root_cause)
        # each rank: its share at the fitted extra slope, and the critical path's two [C, L] arrays (its impact
        # metrics sum over every location)
        extra = (lambda e: c["rc_M0"] + c["rc_m"] * e + 2 * C * L * 8)
        rank0 += extra(e0)
        other = rank(emax) + extra(emax) if K > 1 else None
        inst = r_coll * E / procs
        parts["root_cause"] = c["rc_x"] * E + inst * _reports(ke) * c["rc_r"] if K > 1 else 0.0
    elif global_patterns:  # today's fallback: delay, critical path and POP on rank 0 over gathered tables
        g_fb = c.get("g_fb", sets.get("all", {}).get("g", G_GATHER))
        rank0 = c["M0"] + m_all * E + results + fixed
        fallback = g_fb * (E - e0) if K > 1 else 0.0
        other = rank(emax) + g_fb * emax if K > 1 else None
    total = sum(parts.values())
    return {"rank0": rank0, "other": other, "exchanged": total,
            "exchanged_per_rank": total / K, "parts": parts, "fallback": fallback}


def share_events(trace_path: str, K: int) -> list[int]:
    """Events of each of the K shares ``--mpi`` gives the ranks (analyzer.replay.partition)."""
    from analyzer.replay.engine import partition
    from tracefmt.dense import dense_view
    from tracefmt.detect import open_any

    t = open_any(trace_path)
    if hasattr(t, "defs"):
        t = dense_view(t)
    return [sum(int(t.n_events(int(l))) for l in share) for share in partition(t, K)]


def _mb(x) -> str:
    return "n/a" if x is None else f"{x / 2**20:,.0f}"


def _gb(x) -> str:
    return "n/a" if x is None else f"{x / 2**30:,.1f}"


def crossing(K: int, processes: float) -> float:
    """Fraction of the benchmark trace's messages that cross shares: a ring over P processes cut into
    K' = min(K, P) contiguous shares crosses at 2 K' of its 2 P links (none for one share)."""
    ke = min(K, processes)
    return 0.0 if ke <= 1 else min(1.0, ke / processes)


def print_model(consts: dict, rows: list[dict], pipeline: str, at=MODEL_AT, out=sys.stdout,
                shares: dict[int, list[int]] | None = None, E: float | None = None) -> dict:
    """Model against every measured --mpi row of one trace, then at ``at``; returns what it printed.
    ``shares``: K -> events of each rank's share (the model then uses rank 0's and the largest other's)."""
    E = consts["E0"] if E is None else E
    print(f"\nModel ({pipeline} pipeline) vs measured: {E:,d} events, {consts['P0']} processes, L={consts['L0']}, "
          f"C={consts['C0']}, M0 {consts['M0'] / 2**20:.0f} MB (serial peak at E/100)"
          + (f"; constants measured at {consts['E0']:,d} events" if E != consts["E0"] else ""), file=out)
    for name, k in consts["sets"].items():
        print(f"  {name}: serial m {k['m']:.1f} B/event"
              + (f", gathered g {k['g']:.1f} B/event" if "g" in k else "")
              + (f", walking rank w {k['w']:.1f} B/event (K=2)" if "w" in k else ""), file=out)
    if "c_coll" in consts or "g_fb" in consts:
        print(f"  per share, fitted at K=2: collective rows per instance and share c "
              f"{consts.get('c_coll', COLL_CANDIDATES):.2f}"
              + ("" if "rc_m" in consts or "g_fb" not in consts else f", fallback g_fb {consts['g_fb']:.1f} B/event"),
              file=out)
    if "rc_m" in consts:
        print(f"  root-cause analysis by shares, fitted at K=2 and 4: a rank's extra peak {consts['rc_M0'] / 2**20:.0f} MB "
              f"+ {consts['rc_m']:.1f} B/event of its share; exchange {consts['rc_x']:.1f} B/event + "
              f"{consts['rc_r']:.0f} B per POP arrival report", file=out)
    print(f"{'set':>5} {'K':>3} {'rank0 MB':>9} {'model':>7} {'other MB':>9} {'model':>7} {'exch MB':>9} {'model':>7}",
          file=out)
    checked = []
    for r in rows:
        if r.get("mode") != "mpi" or "error" in r or r.get("skipped") or r["set"] not in consts["sets"]:
            continue
        K = r["ranks"]
        ev = (shares or {}).get(K)
        e0, emax = (ev[0], max(ev[1:], default=0)) if ev else (None, None)
        if pipeline == "gather":
            m = model_gather(consts, r["set"], E, K, e0, emax)
        else:  # the ranks count the fallback's gather (where there is one) with the rest
            m = model_share(consts, E, K, f=crossing(K, consts["P0"]), global_patterns=r["set"] == "all",
                            e0=e0, emax=emax)
            m = dict(m, exchanged=m["exchanged"] + m["fallback"])
        print(f"{r['set']:>5} {K:>3} {r['rank0_peak_mb']:>9.0f} {_mb(m['rank0']):>7} "
              f"{'n/a' if r['other_peak_mb'] is None else format(r['other_peak_mb'], '.0f'):>9} "
              f"{_mb(m['other']):>7} {_mb(r['bytes_exchanged']):>9} {_mb(m['exchanged']):>7}", file=out)
        checked.append({"set": r["set"], "K": K, "measured": {k: r[k] for k in ("rank0_peak_mb", "other_peak_mb",
                                                                                  "bytes_exchanged")},
                        "model": {k: m[k] for k in ("rank0", "other", "exchanged")}})
    E1, K1, L1, C1, f1 = at
    print(f"\nAt E={E1:.0e} events, K={K1:.0f} ranks, L={L1:.0f} locations, C={C1:.0f} call paths, f={f1} "
          f"(per-share pipeline):", file=out)
    evaluated = {}
    for glob in (False, True):
        m = model_share(consts, E1, int(K1), L1, C1, f1, global_patterns=glob)
        label = ("all patterns (delay/critical path/POP by shares)" if "rc_m" in consts else
                 "all patterns (delay/critical path/POP on rank 0)") if glob else "core patterns"
        print(f"  {label}: rank 0 {_gb(m['rank0'])} GB, other ranks {_gb(m['other'])} GB each; exchanged "
              f"{_gb(m['exchanged'])} GB in all ({_mb(m['exchanged_per_rank'])} MB per rank: "
              + ", ".join(f"{k} {_gb(v)} GB" for k, v in m["parts"].items())
              + (f"); fallback gather to rank 0 {_gb(m['fallback'])} GB" if glob else ")"), file=out)
        evaluated["all" if glob else "core"] = m
    return {"checked": checked, "at": {"E": E1, "K": K1, "L": L1, "C": C1, "f": f1, "values": evaluated}}


# ---------------------------------------------------------------- main


def _fmt_row(r: dict) -> str:
    label = f"{r['set']:>5} {r['label']:>14}"
    if r.get("skipped"):
        return f"{label}  skipped: {r['skipped']}"
    if "error" in r:
        return f"{label}  failed: {r['error']}"
    other = "" if r["other_peak_mb"] is None else f"{r['other_peak_mb']:.0f} (r{r['other_rank']})"
    spill = r.get("spill_cpu_ratio")
    return (f"{label} {r['wall_s']:>7.1f} {r['rank_wall_s']:>7.1f} {r['cpu_s']:>7.1f} {r['rank0_peak_mb']:>9.0f} "
            f"{other:>12} {r['sum_peak_mb']:>9.0f} {_mb(r['bytes_exchanged']):>9} {r.get('same', ''):>5}"
            + (f" {spill:>6.2f}x" if spill else "")
            + "".join(f"  ({n})" for n in r.get("notes", []) if "spilled" in n))


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks scaling", description=__doc__.split("\n\n")[0])
    ap.add_argument("--trace", help="trace to analyse (default: the analysis benchmark's 10^7-event 4x4 trace)")
    ap.add_argument("--sizes", default="", help="comma-separated event counts: generated 4x4 traces "
                    "(benchmarks/analysis.py) in --dir, instead of --trace")
    ap.add_argument("--shape", default="4x4", metavar="RxT", help="processes x threads of the generated traces "
                    "(default 4x4: as the analysis benchmark's; K beyond R leaves shares empty)")
    ap.add_argument("--dir", default="bench-out", help="where generated traces are kept")
    ap.add_argument("--ranks", default="1,2,4,8,16", help="analysis rank counts K (default 1,2,4,8,16)")
    ap.add_argument("--patterns", default="all,core", help="pattern sets: " + ", ".join(PATTERN_SETS)
                    + " (default all,core; core leaves out " + ", ".join(SCALASCA2) + ")")
    ap.add_argument("--memory", default="", metavar="LIMIT,...", help="also serial runs with expert-analyze "
                    "--memory LIMIT (e.g. 500M,1G)")
    ap.add_argument("--min-free", type=float, default=3.0, metavar="GB", help="skip a run when less memory "
                    "than this is available before it (default 3)")
    ap.add_argument("--tables", action="store_true", help="measure rows per event and bytes per row of each table")
    ap.add_argument("--model", action="store_true", help="print the analytic model against the measured points "
                    "(implies --tables)")
    ap.add_argument("--pipeline", choices=("auto", "gather", "share"), default="auto", help="which --mpi "
                    "pipeline the model describes (auto: gather when the ranks' records show today's gather)")
    ap.add_argument("--model-at", default=",".join(str(x) for x in MODEL_AT), metavar="E,K,L,C,f",
                    help="where to evaluate the model (default %(default)s)")
    ap.add_argument("--json", metavar="FILE", help="write the table (and model) as JSON")
    ap.add_argument("--no-serial", dest="serial", action="store_false", help="no serial reference run (for "
                    "traces whose serial analysis does not fit; 'same' stays empty)")
    ap.add_argument("--constants", metavar="FILE", help="with --model: the constants of an earlier --json report "
                    "(a smaller trace of the same shape), extrapolated to this trace, instead of measuring them")
    ap.add_argument("--again", metavar="FILE", help="measure nothing: the table and model of the runs in an earlier "
                    "--json FILE (its traces must still exist for the model's share sizes)")
    args = ap.parse_args(argv)
    try:
        ks = parse_ints(args.ranks)
        sizes = parse_sizes(args.sizes)
        sets = [s for s in args.patterns.split(",") if s]
        names = {s: pattern_names(s) for s in sets}
        n_procs, n_threads = (int(x) for x in args.shape.lower().split("x"))
        if n_procs < 1 or n_threads < 1:
            raise ValueError(f"--shape needs positive processes x threads: {args.shape!r}")
        at = tuple(float(x) for x in args.model_at.split(","))
        if len(at) != 5:
            raise ValueError("--model-at needs E,K,L,C,f")
    except ValueError as exc:
        print(f"scaling benchmark: {exc}", file=sys.stderr)
        return 2
    traces = []
    earlier = {}
    if args.again:  # rows of an earlier --json report: the model again, nothing re-measured
        try:
            with open(args.again) as f:
                earlier = {e["trace"]: e for e in json.load(f)["traces"]}
        except (OSError, ValueError, KeyError, TypeError) as exc:
            print(f"scaling benchmark: --again {args.again}: not a report of this benchmark ({exc})", file=sys.stderr)
            return 2
        traces = list(earlier)
        ks = sorted({r["ranks"] for e in earlier.values() for r in e["rows"] if r.get("mode") == "mpi" and "ranks" in r})
    elif sizes:
        os.makedirs(args.dir, exist_ok=True)
        for n in sizes:
            path = os.path.join(args.dir, f"analysis_{n}_{n_procs}x{n_threads}.elg")
            if not os.path.exists(path):
                t = time.perf_counter()
                build_trace(path, n, n_procs, n_threads)
                print(f"[bench] generated {path} in {time.perf_counter() - t:.1f} s", file=sys.stderr)
            traces.append(path)
    else:
        traces.append(args.trace or os.path.join(args.dir, "analysis_10000000_4x4.elg"))
    for t in traces:
        if not os.path.exists(t):
            print(f"scaling benchmark: no trace {t} (python -m benchmarks analysis --sizes 1e7 builds it)",
                  file=sys.stderr)
            return 2
    from analyzer.warmup import warm

    if not args.again:
        warm()  # compile once, outside every measured run
    limits = [s for s in args.memory.split(",") if s and not args.again]
    has_memory = bool(limits) and cli_has_option("--memory")
    report = {"traces": []}
    for trace in traces:
        previous = earlier.get(trace)
        rows = list(previous["rows"]) if previous else []

        def run(r, *a, **kw):
            free = mem_available_gb()
            if free < args.min_free:
                r["skipped"] = f"{free:.1f} GB available < --min-free {args.min_free}"
            else:
                r.update(run_analysis(trace, *a, **kw))
            rows.append(r)
            print(_fmt_row(r), file=sys.stderr, flush=True)
            return r

        for s in sets if previous is None else ():
            serial = {"set": s, "mode": "serial", "label": "serial"}
            if args.serial:
                run(serial, 1, names[s], mpi=False)
            for k in ks:
                run({"set": s, "mode": "mpi", "label": f"mpi K={k}"}, k, names[s])
            for lim in limits:
                r = {"set": s, "mode": "memory", "label": f"--memory {lim}"}
                if not has_memory:
                    r["skipped"] = "n/a (no --memory)"
                    rows.append(r)
                    continue
                run(r, 1, names[s], extra=["--memory", lim], mpi=False)
                if "cpu_s" in r and "cpu_s" in serial:
                    r["spill_cpu_ratio"] = r["cpu_s"] / serial["cpu_s"]
                    r["spill_cpu_s"] = r["cpu_s"] - serial["cpu_s"]
            want = serial.get("json") if args.serial else None
            if not args.serial:
                continue
            for r in rows:
                if r["set"] == s and "json" in r:
                    r["same"] = "ref" if r is serial else ("yes" if r["json"] == want else "NO")
        size = os.path.getsize(trace)
        print(f"\nScaling of the distributed analysis: {trace} ({size / 1e6:,.0f} MB), "
              f"Open MPI, oversubscribed on {os.cpu_count()} cores, one numba thread per rank")
        print(f"{'set':>5} {'mode':>14} {'wall s':>7} {'rank s':>7} {'cpu s':>7} {'rank0 MB':>9} "
              f"{'other MB':>12} {'sum MB':>9} {'exch MB':>9} {'same':>5} {'spill':>7}")
        for r in rows:
            print(_fmt_row(r))
        entry = {"trace": trace, "bytes": size, "rows": [{k: v for k, v in r.items() if k != "json"} for r in rows]}
        if args.constants:  # the model of an earlier (smaller) trace, extrapolated to this one's events
            with open(args.constants) as f:
                consts = next(e["model"] for e in json.load(f)["traces"] if e.get("model"))
            shares = {k: share_events(trace, k) for k in ks}
            events = sum(shares[ks[0]]) if ks else consts["constants"]["E0"]
            entry["model"] = print_model(consts["constants"], rows, consts["pipeline"], at, shares=shares, E=events)
            entry["model"].update(constants=consts["constants"], pipeline=consts["pipeline"], events=events)
        elif args.tables or args.model:
            tables = (previous or {}).get("tables") or measure_tables(trace)
            entry["tables"] = tables
            E = tables["events"]
            print(f"\nTables of a serial analysis ({E:,d} events, {tables['locations']} locations, "
                  f"{tables['callpaths']} call paths, {tables['metrics']} metrics)")
            print(f"{'table':>22} {'rows':>11} {'rows/event':>11} {'bytes/row':>10} {'MB':>8}")
            for n, t in tables["tables"].items():
                print(f"{n:>22} {t['rows']:>11,d} {t['rows_per_event']:>11.4f} {t['bytes_per_row']:>10d} "
                      f"{t['rows'] * t['bytes_per_row'] / 1e6:>8.1f}")
        if args.model and not args.constants:
            serial = {r["set"]: r for r in rows if r["mode"] == "serial" and "rank0_peak_mb" in r}
            if not serial:
                print("\nModel: needs a serial run (every pattern set has one unless skipped)", file=sys.stderr)
            else:
                pipeline = args.pipeline
                if pipeline == "auto":  # today's gather is the one that leaves gather_bytes_sent in the records
                    pipeline = "gather" if any((p.get("traffic") or {}).get("gather_bytes_sent")
                                               for r in rows for p in r.get("per_rank", [])) else "share"
                two = {r["set"]: r for r in rows if r["mode"] == "mpi" and r.get("ranks") == 2}
                four = {r["set"]: r for r in rows if r["mode"] == "mpi" and r.get("ranks") == 4}
                procs = _processes(trace)
                m0 = ((previous or {}).get("model") or {}).get("constants", {}).get("M0")  # as measured then
                m0 = m0 or _small_peak(trace, tables, procs, args.dir)
                shares = {k: share_events(trace, k) for k in ks}
                consts = model_constants(tables, m0, serial, two, procs, pipeline,
                                         e0_two=share_events(trace, 2)[0], four=four,
                                         e0_four=share_events(trace, 4)[0])
                entry["model"] = print_model(consts, rows, pipeline, at, shares=shares)
                entry["model"].update(constants=consts, pipeline=pipeline)
        report["traces"].append(entry)
    if args.json:
        with open(args.json, "w") as f:
            json.dump(report, f, indent=1)
    return 0


def _small_peak(trace: str, tables: dict, procs: int, cache: str) -> float:
    """Peak RSS (bytes) of a serial analysis of a generated trace of the same shape, 1/100 the events:
    the part of a rank's memory that does not grow with its share (interpreter, numpy, loaded kernels)."""
    threads = max(1, tables["locations"] // procs)
    n = max(10_000, tables["events"] // 100)
    os.makedirs(cache, exist_ok=True)
    path = os.path.join(cache, f"analysis_{n}_{procs}x{threads}.elg")
    if not os.path.exists(path):
        build_trace(path, n, procs, threads)
    r = run_analysis(path, 1, None, mpi=False)
    if "error" in r:
        raise SystemExit(f"scaling benchmark: the small analysis failed: {r['error']}")
    return r["rank0_peak_mb"] * 2**20


def _processes(trace: str) -> int:
    """Number of traced processes (MPI ranks) of ``trace``."""
    from tracefmt.detect import open_any

    t = open_any(trace)
    locs = t.defs.locations
    return len({int(locs[int(l)].process) for l in t.location_ids}) or 1


if __name__ == "__main__":
    sys.exit(main())
