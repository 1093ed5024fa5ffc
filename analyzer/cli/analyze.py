"""``expert-analyze``: analyze a trace, print the EXPERT presenter's three views in text, write the cube.

    expert-analyze TRACE [-o result.cubex] [--json result.json] [--hdf5 result.h5] [--timeline out.json]
                   [--patterns NAME,...] [--all] [--top N] [-j N] [--salvage] [--no-progress] [-q]
    mpiexec -n K expert-analyze --mpi TRACE ...     (distributed: rank 0 writes and prints)

The result does not depend on -j or on K.

Exit status: 0 on success, 2 on bad input (unreadable trace, unknown
pattern, a file that cannot be written), with one line naming the problem.
A damaged or truncated trace, or one whose time goes backwards on a
location, is bad input unless ``--salvage`` is given: then the analysis
covers what survived, and the report and the cube say what was lost.
"""

from __future__ import annotations

import argparse
import os
import sys

from tracefmt.names import TerminalWriter, printable
from tracefmt.merge import missing_trace_note

from .pop_table import pop_table
from .text_report import report
from .tools import quiet_on_closed_pipe

PROG = "expert-analyze"


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog=PROG, description="Automatic wait-state analysis of an event trace: prints the "
                                "property tree with severities and writes a CUBE4 result.")
    p.add_argument("--list-patterns", action="store_true",
                   help="print the performance properties (built-in and plugins) as a tree and exit")
    p.add_argument("trace", nargs="?", help="trace: our .elg, an EPILOG 1.x file or EPIK directory, or an OTF2 anchor "
                   "(traces.otf2) or its directory; the format is detected from the content")
    p.add_argument("-o", "--output",
                   help="CUBE4 result file (default: the trace's name with .cubex for its extension: app.elg -> app.cubex)")
    p.add_argument("--json", metavar="FILE", help="also write the JSON summary")
    p.add_argument("--hdf5", metavar="FILE", help="also write the whole cube as HDF5")
    p.add_argument("--timeline", metavar="FILE.json",
                   help="also write the trace as a Chrome/Perfetto timeline (open it in ui.perfetto.dev) with every "
                   "wait state as a slice, an arrow from its cause and the critical path as a track")
    p.add_argument("--patterns", metavar="NAME,...", help="compute only these properties (and their parents)")
    p.add_argument("--without", metavar="NAME,...", default="",
                   help="leave out these properties, their sub-properties and what depends on them (e.g. "
                   "--without delay,critical_path,performance_impact,pop_resources: the root-cause analysis, whose "
                   "backward replay needs the whole trace's tables in one process)")
    p.add_argument("--no-plugins", action="store_true", help="ignore third-party patterns")
    p.add_argument("--plugin", action="append", default=[], metavar="FILE.py",
                   help="also load the patterns defined in this Python file (repeatable; no packaging needed)")
    p.add_argument("--all", action="store_true", dest="show_all",
                   help="print every property; by default those of a paradigm the trace does not use (zero by "
                   "construction) and those it cannot measure are left out, and one line says so")
    p.add_argument("--top", type=int, default=5, metavar="N",
                   help="how many worst properties, call paths and locations to list (default 5)")
    p.add_argument("-j", "--jobs", type=int, default=None, metavar="N",
                   help="threads replaying disjoint shares of the trace's processes (default: all cores "
                   "this process may use); results are identical for every N")
    p.add_argument("--mpi", action="store_true",
                   help="distributed analysis under mpiexec (needs mpi4py): each rank reads and replays only "
                   "its share of the processes, rank 0 merges, prints and writes the result")
    p.add_argument("--memory", metavar="LIMIT", default=None,
                   help="keep the analysis within LIMIT (4G, 512M, bytes, or 50%% of the memory available now; "
                   "default: half of it): a trace that needs more is analysed in shares of whole processes one "
                   "after another, spilling to disk between steps; results are identical")
    p.add_argument("--spill-dir", metavar="DIR", default=None,
                   help="where --memory spills (default: the system's temporary directory); removed afterwards")
    p.add_argument("--salvage", action="store_true",
                   help="analyze what survived of a damaged or truncated trace, and raise times that go backwards "
                   "to the time before, instead of failing; the report and the cube say what was lost")
    p.add_argument("--no-progress", action="store_true", help="no progress bar")
    p.add_argument("-q", "--quiet", action="store_true", help="print nothing but errors")
    return p


def _progress_bar(trace, disable: bool):
    """A tqdm bar over events for long traces, or None."""
    if disable or not sys.stderr.isatty():
        return None, None
    try:
        from tqdm import tqdm
    except ImportError:
        return None, None
    total = sum(int(trace.n_events(int(l))) for l in trace.location_ids)
    if total < 2_000_000:
        return None, None
    bar = tqdm(total=total, unit="ev", unit_scale=True, desc="replay", file=sys.stderr, leave=False)
    return bar, bar.update


def _result_not_trace(path: str) -> str | None:
    """A message when ``path`` is an analysis result (a cube or JSON summary) instead of a trace, else None."""
    if not os.path.isfile(path):
        return None
    try:
        with open(path, "rb") as f:
            head = f.read(512)
    except OSError:
        return None
    if len(head) >= 262 and head[257:262] == b"ustar":
        kind = "a CUBE4 result (.cubex)"
    elif head.lstrip().startswith(b"<?xml") or head.lstrip().startswith(b"<cube"):
        kind = "a CUBE3 result"
    elif head.startswith(b"\x89HDF"):
        kind = "an HDF5 result"
    elif head.lstrip().startswith(b"{") and b"expert-analyze-summary" in head:
        kind = "a JSON summary"
    else:
        return None
    return (f"{path} is {kind}, not a trace: view it with `expert-report {path} -o report.html`, compare it with "
            f"`expert-diff BASE {path}`, or gate on it with `expert-check {path} --baseline BASE`")


def default_jobs() -> int:
    """All cores this process may run on."""
    try:
        return max(1, len(os.sched_getaffinity(0)))
    except (AttributeError, OSError):
        return max(1, os.cpu_count() or 1)


#: trace file extensions replaced by .cubex for the default output name
TRACE_EXTENSIONS = (".elg", ".otf2", ".elg.gz")


def default_cube_path(trace: str) -> str:
    """app.elg -> app.cubex; a directory (EPIK archive) or other name gets .cubex appended."""
    trace = trace.rstrip("/" + os.sep)
    for ext in TRACE_EXTENSIONS:
        if trace.endswith(ext) and len(trace) > len(ext):
            return trace[: -len(ext)] + ".cubex"
    return trace + ".cubex"


@quiet_on_closed_pipe
def main(argv=None) -> int:
    parser = _parser()
    args = parser.parse_args(argv)
    if args.top < 0:
        parser.error(f"--top must be 0 or more, got {args.top}")
    if args.list_patterns:
        from patterns.api import PatternError
        from patterns.registry import available_patterns, format_hierarchy

        try:
            print(format_hierarchy(available_patterns(plugins=not args.no_plugins, files=args.plugin)))
        except PatternError as exc:  # a broken plugin
            print(f"{PROG}: error: {exc}", file=sys.stderr)
            return 2
        return 0
    if args.trace is None:
        parser.error("the following arguments are required: trace")
    import tracefmt
    from patterns.api import PatternError
    from tracefmt.detect import open_any

    from analyzer.analyze import SALVAGED_ATTR, analyze, damage_note
    from analyzer.cube import CubeError, write_cubex, write_hdf5, write_json

    errors = (tracefmt.TraceFormatError, PatternError, CubeError, OSError, ValueError, RuntimeError)
    jobs = default_jobs() if args.jobs is None else args.jobs
    if jobs < 1:
        print(f"{PROG}: error: -j needs a positive number of jobs, got {jobs}", file=sys.stderr)
        return 2
    memory, explicit_memory = None, args.memory is not None
    if not args.mpi:
        from analyzer.distributed.memory import default_limit, parse_size

        try:
            memory = parse_size(args.memory) if explicit_memory else default_limit()
        except ValueError as exc:
            print(f"{PROG}: error: {exc}", file=sys.stderr)
            return 2
    elif explicit_memory:
        print(f"{PROG}: error: --memory bounds the analysis in one process; under --mpi start more ranks instead",
              file=sys.stderr)
        return 2
    comm = None
    if args.mpi:
        from analyzer.distributed.payload import world

        try:
            comm = world()
        except RuntimeError as exc:
            print(f"{PROG}: error: {exc}", file=sys.stderr)
            return 2
        jobs = 1  # one walker per rank: start more ranks for more parallelism
    root = comm is None or comm.rank == 0
    out_path = args.output or default_cube_path(args.trace)
    bar = None
    cube = None
    rc = 0
    # every rank opens the trace; all must succeed before any enters the collective replay
    trace, err = None, None
    try:
        if not os.path.exists(args.trace):  # a crashed run may have left per-process pieces: say how to merge
            raise FileNotFoundError(f"{args.trace}: no such file{missing_trace_note(args.trace)}")
        trace = open_any(args.trace)
        if trace.problems and not args.salvage:  # as expert-trace check: one line, exit 2
            err = f"{args.trace}: {damage_note(list(trace.problems))}"
        elif root and not args.quiet:
            for note in getattr(trace, "notes", ()):  # records of kinds we do not analyse: say so, go on
                print(f"{PROG}: note: {printable(note)}", file=sys.stderr)
    except errors as exc:
        err = _result_not_trace(args.trace) if isinstance(exc, tracefmt.TraceFormatError) else None
        err = err or str(exc)
    if comm is not None:
        failed = [(r, e) for r, e in enumerate(comm.allgather(err)) if e]
        err = (failed[0][1] if failed[0][0] == 0 else f"rank {failed[0][0]}: {failed[0][1]}") if failed else None
    if err is not None:
        if root:
            print(f"{PROG}: error: {printable(err)}", file=sys.stderr)
        return 2
    try:
        if root:
            bar, update = _progress_bar(trace, args.no_progress or args.quiet)
        else:
            update = None
        notes: list[str] = []
        cube = analyze(trace, patterns=args.patterns, plugins=not args.no_plugins, progress=update, jobs=jobs,
                       comm=comm, plugin_files=args.plugin, salvage=args.salvage,
                       memory=memory, memory_strict=explicit_memory, without=args.without,
                       spill_dir=args.spill_dir, keep_tables=bool(args.timeline), notes=notes)
        if root and not args.quiet:
            for note in notes:
                print(f"{PROG}: note: {note}", file=sys.stderr)
        if bar is not None:
            bar.close()
            bar = None
        if root:
            write_cubex(cube, out_path)
            if args.json:
                write_json(cube, args.json)
            if args.hdf5:
                write_hdf5(cube, args.hdf5)
            if args.timeline:
                from analyzer.timeline import write_timeline

                for note in write_timeline(cube.context, args.timeline).get("left out", []):
                    if not args.quiet:
                        print(f"{PROG}: note: timeline: {note}", file=sys.stderr)
    except errors as exc:
        if bar is not None:
            bar.close()
        if root:
            print(f"{PROG}: error: {printable(str(exc))}", file=sys.stderr)
        rc = 2
    if comm is not None:
        rc = comm.bcast(rc, root=0)
    if rc or not root:
        return rc
    if not args.quiet:
        report(cube, top=args.top, show_all=args.show_all, out=TerminalWriter(sys.stdout))  # names: no escapes
        pop_table(cube, out=sys.stdout)
        for prob in ([] if SALVAGED_ATTR in cube.attrs else cube.context.problems):  # else the report lists them
            print(f"{PROG}: warning: {printable(prob)}", file=sys.stderr)
        print(f"\nwrote {out_path}" + "".join(f", {f}" for f in (args.json, args.hdf5, args.timeline) if f))
    return 0


if __name__ == "__main__":
    sys.exit(main())
