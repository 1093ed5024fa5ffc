"""``expert-trace convert IN OUT --to {otf2,chrome,elg}``: format conversion.

IN may be any trace ``tracefmt.detect`` recognises (our ``.elg``, EPILOG 1.x,
an EPIK archive, OTF2).  OUT is a directory for OTF2, a ``.json`` file for
the Chrome/Perfetto timeline and a ``.elg`` file for our own format.
"""

from __future__ import annotations

import argparse
import os
import sys

from .detect import open_any

FORMATS = ("otf2", "chrome", "elg")


def convert(src: str, dst: str, to: str, force: bool = False) -> list[str]:
    """Convert; returns notes (what the source lacked or the target cannot hold)."""
    if to not in FORMATS:
        raise ValueError(f"unknown target format {to!r} (one of {', '.join(FORMATS)})")
    trace = open_any(src)
    notes = list(trace.problems)
    if to == "otf2":
        from .otf2_out import write_otf2

        notes += write_otf2(trace, dst, force=force)
    elif to == "chrome":
        from .chrome import write_chrome

        write_chrome(trace, dst)
    else:
        import numpy as np

        from .layout import EVENT_DTYPE
        from .writer import TraceWriter

        with TraceWriter(dst, creator=f"expert-trace convert from {os.path.basename(src)}") as w:
            w.write_definitions(trace.defs)
            for loc in trace.location_ids.tolist():
                ev = trace.events(loc)
                rec = np.zeros(len(ev), EVENT_DTYPE)
                rec["time"] = ev.ticks
                for f in ("type", "flags", "a", "b", "c", "d", "e"):
                    rec[f] = getattr(ev, f)
                w.write_events(loc, rec)
    return notes


def add_parser(sub) -> argparse.ArgumentParser:
    """Register the ``convert`` subcommand on an argparse subparsers object."""
    sp = sub.add_parser("convert", help="convert a trace (ours, EPILOG, EPIK, OTF2) to OTF2, Chrome JSON or .elg")
    sp.add_argument("src", metavar="IN", help="trace file or archive directory, any supported format")
    sp.add_argument("dst", metavar="OUT", help="output: a directory for otf2, a file for chrome and elg")
    sp.add_argument("--to", required=True, choices=FORMATS, help="target format")
    sp.add_argument("--force", action="store_true", help="replace an existing OTF2 output directory")
    sp.set_defaults(func=cmd_convert)
    return sp


def cmd_convert(args) -> int:
    notes = convert(args.src, args.dst, args.to, force=args.force)
    for n in notes:
        print(f"note: {n}", file=sys.stderr)
    print(f"{args.src} -> {args.dst} ({args.to})")
    return 0
