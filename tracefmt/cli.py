"""``expert-trace``: look into and check ``.elg`` trace files.

    expert-trace info  FILE                      what is in the file, per location
    expert-trace dump  FILE [--location L] [--start T] [--end T]
    expert-trace check FILE                      the validator
    expert-trace merge OUT.elg [PIECE ...]       one trace from per-process traces (OUT.0.elg, ...)

FILE may also be an EPILOG 1.x trace, an EPIK directory or an OTF2 archive
(read as expert-analyze reads them: converted in memory).

Exit status: 0 clean, 1 problems found (check), 2 unreadable or damaged file,
3 internal error.  A damaged file is reported in one line; ``--salvage``
works on the blocks that survived instead.
"""

from __future__ import annotations

import argparse
import os
import struct
import sys

import numpy as np

from . import layout
from .errors import TraceFormatError
from .layout import ANY, NO_ID, RMA_GROUP_SYNCS, EventType, MetricDtype, RmaAtomic, RmaSync
from .names import printable
from .detect import detect, open_any
from .reader import Trace
from .validate import validate

EXIT_OK, EXIT_PROBLEMS, EXIT_UNREADABLE, EXIT_INTERNAL = 0, 1, 2, 3


class _Unreadable(Exception):
    pass


_FOREIGN_NAMES = {"epilog": "EPILOG 1.x", "epik": "EPIK archive (EPILOG 1.x)", "otf2": "OTF2"}


def _open(args) -> Trace:
    # like expert-analyze, read EPILOG / EPIK / OTF2 input too (converted in memory)
    args.kind = detect(args.file)
    trace = Trace(args.file, verify=True) if args.kind == "native" else open_any(args.file)
    if trace.problems and not args.salvage:
        more = len(trace.problems) - 1
        extra = f" (and {more} more problem{'s' if more > 1 else ''})" if more else ""
        raise _Unreadable(f"{args.file}: damaged or incomplete trace: {trace.problems[0]}{extra}; "
                          "use --salvage to read the complete blocks")
    for p in trace.problems:
        print(printable(f"warning: {args.file}: {p}"), file=sys.stderr)
    return trace


def _fmt_bytes(n: int) -> str:
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n} {unit}" if unit == "B" else f"{n:.1f} {unit}"
        n /= 1024
    return str(n)


# ---------------------------------------------------------------------- info
def cmd_info(args) -> int:
    trace = _open(args)
    d, h = trace.defs, trace.header
    order = "little" if h.byte_order == layout.BYTE_ORDER_LITTLE else "big"
    print(f"file        {printable(args.file)}")
    if args.kind == "native":
        print(f"size        {_fmt_bytes(os.path.getsize(args.file))} ({os.path.getsize(args.file)} bytes)")
        print(f"format      .elg {h.version[0]}.{h.version[1]}, {order}-endian, "
              f"{'finished' if h.finished else 'NOT finished'}")
    else:
        print(f"format      {_FOREIGN_NAMES[args.kind]}, converted in memory")
    print(f"creator     {printable(h.creator)}")
    print(f"system      {len(d.machines)} machines, {len(d.nodes)} nodes, {len(d.processes)} processes, "
          f"{len(d.locations)} locations")
    print(f"defined     {len(d.regions)} regions, {len(d.comms)} communicators, {len(d.locks)} locks, "
          f"{len(d.metrics)} metrics" + (f", {len(d.windows)} MPI windows" if d.windows else ""))
    for k, v in sorted(d.attributes.items()):
        print(f"attribute   {printable(k)} = {printable(v)}")
    types = [t for t in EventType]
    totals = np.zeros(len(types), np.int64)
    rows = []
    t_min, t_max = np.inf, -np.inf
    for loc in trace.location_ids.tolist():
        ev = trace.events(loc)
        counts = np.bincount(ev.type, minlength=256)
        per = np.array([counts[int(t)] for t in types])
        totals += per
        if len(ev):
            t0, t1 = float(ev.time.min()), float(ev.time.max())
            t_min, t_max = min(t_min, t0), max(t_max, t1)
            span = f"{t0:12.6f} {t1:12.6f} {t1 - t0:12.6f}"
        else:
            span = f"{'-':>12} {'-':>12} {'-':>12}"
        rows.append((loc, len(ev), span, per))
    used = [j for j, t in enumerate(types) if totals[j]]
    names = [types[j].name.lower() for j in used]
    width = [max(len(n), 7) for n in names]
    print()
    head = f"{'location':>8} {'rank':>5} {'thread':>6} {'events':>10} {'first [s]':>12} {'last [s]':>12} " \
           f"{'duration':>12}"
    print(head + "".join(f" {n:>{w}}" for n, w in zip(names, width)))
    for loc, n, span, per in rows:
        L = d.locations[loc]
        print(f"{loc:>8} {L.process:>5} {L.thread:>6} {n:>10} {span}" +
              "".join(f" {per[j]:>{w}}" for j, w in zip(used, width)))
    total_span = f"{t_min:12.6f} {t_max:12.6f} {t_max - t_min:12.6f}" if t_max >= t_min else f"{'-':>12}" * 3
    print(f"{'total':>8} {'':>5} {'':>6} {int(totals.sum()):>10} {total_span}" +
          "".join(f" {totals[j]:>{w}}" for j, w in zip(used, width)))
    return EXIT_OK


# ---------------------------------------------------------------------- dump
def describe(defs, typ, flags, a, b, c, d, e) -> str:
    """One event's fields in words."""
    def region(r):
        reg = defs.regions.get(r)
        return printable(reg.name) if reg else f"<region {r}>"

    def comm(x):
        cm = defs.comms.get(x)
        return printable(cm.name) if cm else f"<comm {x}>"

    def rank(x):
        return "ANY" if x == ANY else ("-" if x == NO_ID else str(x))

    try:
        t = EventType(typ)
    except ValueError:
        return f"UNKNOWN({typ}) flags={flags} a={a} b={b} c={c} d={d} e={e}"
    if t == EventType.ENTER:
        s = f"ENTER {region(a)}"
        if c != NO_ID:
            s += f" team={c} thread={d}"
        return s
    if t == EventType.EXIT:
        return f"EXIT {region(a)}"
    req = f" request={e}" if e else ""
    if t == EventType.MPI_SEND:
        return f"MPI_SEND dest={a} comm={comm(b)} tag={c} bytes={d}{req}" + (f" flags={flags}" if flags else "")
    if t == EventType.MPI_RECV:
        return f"MPI_RECV source={a} comm={comm(b)} tag={c} bytes={d}{req}" + (f" flags={flags}" if flags else "")
    if t == EventType.MPI_RECV_REQUEST:
        return f"MPI_RECV_REQUEST source={rank(a)} comm={comm(b)} tag={rank(c)} request={e}"
    if t in (EventType.MPI_SEND_COMPLETE, EventType.MPI_REQUEST_CANCELLED):
        return f"{t.name} request={e}"
    if t == EventType.MPI_COLLEXIT:
        return f"MPI_COLLEXIT {region(a)} comm={comm(b)} root={rank(c)} sent={d} received={e}"
    if t in (EventType.OMP_FORK, EventType.OMP_JOIN):
        return f"{t.name} team={a} size={c}"
    if t == EventType.OMP_COLLEXIT:
        return f"OMP_COLLEXIT {region(a)} team={b}"
    if t in (EventType.OMP_ACQUIRE_LOCK, EventType.OMP_RELEASE_LOCK):
        lk = defs.locks.get(a)
        return f"{t.name} {printable(lk.name) if lk else f'<lock {a}>'} order={d}"
    if t == EventType.COUNTER:
        m = defs.metrics.get(a)
        if m is None:
            return f"COUNTER <metric {a}> value={d}"
        value = struct.unpack("<d", struct.pack("<Q", d))[0] if m.dtype == MetricDtype.DOUBLE else d
        return f"COUNTER {printable(m.name)}={value}{' ' + printable(m.unit) if m.unit else ''}"
    if t in (EventType.MPI_RMA_PUT, EventType.MPI_RMA_GET):
        return f"{t.name} window={a} target={rank(b)} bytes={d}" + (f" flags={flags}" if flags else "")
    if t == EventType.MPI_RMA_ATOMIC:
        op = RmaAtomic(c).name if c in RmaAtomic._value2member_map_ else str(c)
        return f"MPI_RMA_ATOMIC window={a} target={rank(b)} op={op} sent={d} received={e}" + (
            f" flags={flags}" if flags else "")
    if t == EventType.MPI_RMA_SYNC:
        kind = RmaSync(c).name if c in RmaSync._value2member_map_ else str(c)
        if c in RMA_GROUP_SYNCS:
            what = f" group={rank(b)} {list(defs.groups.get(b, ()))}"
        else:
            what = "" if b == NO_ID else f" target={rank(b)}"
        return f"MPI_RMA_SYNC {kind} window={a}{what}" + (f" flags={flags}" if flags else "")
    return t.name


def _locations(arg: list[str] | None, trace: Trace) -> list[int]:
    if not arg:
        return trace.location_ids.tolist()
    out = []
    for part in ",".join(arg).split(","):
        try:
            loc = int(part)
        except ValueError:
            raise _Usage(f"--location expects location ids, got {part!r}") from None
        if loc not in trace.defs.locations:
            raise _Usage(f"no location {loc} in {trace.path} (locations: {trace.location_ids.tolist()})")
        out.append(loc)
    return out


class _Usage(Exception):
    pass


def cmd_dump(args) -> int:
    trace = _open(args)
    d = trace.defs
    out = sys.stdout
    for loc in _locations(args.location, trace):
        ev = trace.events(loc)
        idx = np.arange(len(ev))
        keep = np.ones(len(ev), bool)
        if args.start is not None:
            keep &= ev.time >= args.start
        if args.end is not None:
            keep &= ev.time <= args.end
        L = d.locations[loc]
        out.write(f"# location {loc} (rank {L.process}, thread {L.thread}, {printable(L.name)}): "
                  f"{int(keep.sum())} of {len(ev)} events\n")
        sel = ev[keep]
        for i, t, typ, fl, a, b, c, dd, e in zip(
            idx[keep].tolist(), sel.time.tolist(), sel.type.tolist(), sel.flags.tolist(), sel.a.tolist(),
            sel.b.tolist(), sel.c.tolist(), sel.d.tolist(), sel.e.tolist(),
        ):
            out.write(f"{loc:>5} {i:>9} {t:16.9f}  {describe(d, typ, fl, a, b, c, dd, e)}\n")
    return EXIT_OK


# ---------------------------------------------------------------------- check
def cmd_check(args) -> int:
    trace = _open(args)
    problems = validate(trace, max_problems=args.max_problems)
    for p in problems:
        print(printable(str(p)))
    n_events = sum(trace.n_events(loc) for loc in trace.location_ids.tolist())
    if problems:
        capped = args.max_problems is not None and len(problems) >= args.max_problems
        print(f"{args.file}: {len(problems)}{'+' if capped else ''} problem{'s' if len(problems) != 1 else ''} "
              f"in {n_events} events", file=sys.stderr)
        return EXIT_PROBLEMS
    print(f"{args.file}: ok ({len(trace.location_ids)} locations, {n_events} events)")
    return EXIT_OK


def cmd_merge(args) -> int:
    from .merge import merge, per_process_files

    pieces = args.pieces or per_process_files(args.output)
    r = merge(pieces, args.output)
    state = "complete" if r.complete else "incomplete (a process ended abnormally)"
    print(printable(f"{r.output}: {r.processes} process(es), {r.locations} location(s), {r.events} events "
                    f"from {len(r.pieces)} file(s); {state}"))
    if r.closed_regions:
        print(printable(f"  {r.closed_regions} region(s) still open where a piece ends were closed at its last event"))
    for note in r.notes:
        print(printable(f"  {note}"))
    return EXIT_OK


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(
        prog="expert-trace",
        description="Inspect and check .elg event traces.",
        epilog="exit status: 0 clean, 1 problems found, 2 unreadable or damaged file",
    )
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def common(sp):
        sp.add_argument("file", metavar="FILE", help="trace: our .elg, EPILOG 1.x, an EPIK directory or OTF2")
        sp.add_argument("--salvage", action="store_true",
                        help="work on the complete blocks of a damaged or truncated file instead of failing")

    sp = sub.add_parser("info", help="header, definitions and per-location event counts")
    common(sp)
    sp.set_defaults(func=cmd_info)
    sp = sub.add_parser("dump", help="print events one per line")
    common(sp)
    sp.add_argument("--location", "-l", action="append", metavar="L",
                    help="location id(s) to dump (repeat or comma-separate; default all)")
    sp.add_argument("--start", type=float, metavar="T", help="first time to show, seconds")
    sp.add_argument("--end", type=float, metavar="T", help="last time to show, seconds")
    sp.set_defaults(func=cmd_dump)
    sp = sub.add_parser("check", help="validate nesting, messages, collectives, teams, locks, clock condition")
    common(sp)
    sp.add_argument("--max-problems", type=int, default=None, metavar="N", help="stop after N problems")
    sp.set_defaults(func=cmd_check)
    sp = sub.add_parser("merge", help="one trace from the per-process traces a crashed or unmerged run left "
                                      "(OUT.0.elg, OUT.1.elg, ...; docs/runtime.md)")
    sp.add_argument("output", metavar="OUT.elg", help="the merged trace (the run's -o path)")
    sp.add_argument("pieces", metavar="PIECE", nargs="*",
                    help="per-process traces (default: every OUT.<n>.elg next to OUT.elg)")
    sp.set_defaults(func=cmd_merge)
    from .convert import add_parser as add_convert_parser  # interoperability (docs/interop.md)

    add_convert_parser(sub)
    return p


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except (TraceFormatError, _Unreadable, _Usage) as e:  # one line, whatever the names in it hold
        print(f"expert-trace: error: {printable(str(e))}", file=sys.stderr)
        return EXIT_UNREADABLE
    except BrokenPipeError:  # `expert-trace dump x.elg | head`
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        return EXIT_OK
    except KeyboardInterrupt:
        return 130
    except Exception as e:  # never a traceback at the command line
        print(f"expert-trace: internal error ({type(e).__name__}: {printable(str(e))}); please report it with the file",
              file=sys.stderr)
        return EXIT_INTERNAL


if __name__ == "__main__":
    sys.exit(main())
