"""``expert-trace convert IN OUT --to {otf2,chrome,elg}``: format conversion.

IN may be any trace ``tracefmt.detect`` recognises (our ``.elg``, EPILOG 1.x,
an EPIK archive, OTF2).  OUT is a directory for OTF2, a ``.json`` file for
the Chrome/Perfetto timeline and a ``.elg`` file for our own format.

The Chrome timeline holds the trace's own events only: wait states, their
causes and the critical path come from the analysis, which this layer does not
import (docs/architecture.md); ``expert-analyze TRACE --timeline OUT.json``
writes the same timeline with them (``analyzer.timeline``).
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import os
import sys
import tempfile

from .detect import open_any
from .errors import TraceFormatError
from .names import escape_bytes

FORMATS = ("otf2", "chrome", "elg")


def convert(src: str, dst: str, to: str, force: bool = False) -> list[str]:
    """Convert; returns notes (what the source lacked or the target cannot hold)."""
    if to not in FORMATS:
        raise ValueError(f"unknown target format {to!r} (one of {', '.join(FORMATS)})")
    trace = open_any(src)
    notes = list(trace.problems)
    if to in ("otf2", "chrome"):
        _escape_names(trace.defs)  # OTF2's strings must be UTF-8: an undecodable byte goes out as \xNN
        try:
            if to == "otf2":
                from .otf2_out import write_otf2

                with _library_messages() as said:  # the OTF2 C library prints its own error lines
                    try:
                        notes += write_otf2(trace, dst, force=force)
                    except (OSError, TraceFormatError):
                        raise
                    except Exception as exc:
                        raise _Unwritable(exc, said) from None
            else:
                from .chrome import write_chrome

                write_chrome(trace, dst)
        except (OSError, TraceFormatError):
            raise
        except _Unwritable as exc:  # the OTF2 library refused: its own words, summarised in our one line
            why = f"{type(exc.cause).__name__}: {exc.cause}" + (f" (OTF2: {exc.said[0]})" if exc.said else "")
            raise TraceFormatError(f"cannot be written as {to}: {why}; `expert-trace check {src}` names what is "
                                   f"inconsistent", path=src) from None
        except Exception as exc:  # an inconsistent trace (undefined region or comm, ...): our one line
            raise TraceFormatError(f"cannot be written as {to}: {type(exc).__name__}: {exc}; `expert-trace check "
                                   f"{src}` names what is inconsistent", path=src) from None
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


class _Unwritable(Exception):
    """The OTF2 writer failed; ``said``: the error lines the OTF2 library printed meanwhile."""

    def __init__(self, cause: Exception, said: list[str]):
        super().__init__(str(cause))
        self.cause, self.said = cause, said


@contextlib.contextmanager
def _library_messages():
    """Collect what C code prints on file descriptor 2 meanwhile (the OTF2 library's ``[OTF2] ... error:``
    lines) instead of letting it reach the terminal; yields a list that then holds the error texts, and
    passes anything else on to stderr afterwards."""
    said: list[str] = []
    sys.stderr.flush()
    saved = os.dup(2)
    with tempfile.TemporaryFile() as tmp:
        os.dup2(tmp.fileno(), 2)
        try:
            yield said
        finally:
            os.dup2(saved, 2)
            os.close(saved)
            tmp.seek(0)
            text = tmp.read().decode("utf-8", "replace")
            for line in text.splitlines():
                head, sep, rest = line.partition(" error: ")
                if line.startswith("[OTF2]") and sep:
                    said.append(rest.strip())
                elif line.strip():
                    print(line, file=sys.stderr)


def _escape_names(defs) -> None:
    """Every name of ``defs`` (of a trace this module opened) in place through ``names.escape_bytes``."""
    for table in (defs.regions, defs.machines, defs.nodes, defs.processes, defs.locations, defs.comms, defs.locks,
                  defs.metrics):
        for k, v in list(table.items()):
            new = escape_bytes(v.name)
            if new != v.name:
                table[k] = dataclasses.replace(v, name=new)
    for k, m in list(defs.metrics.items()):
        if escape_bytes(m.unit) != m.unit:
            defs.metrics[k] = dataclasses.replace(m, unit=escape_bytes(m.unit))
    defs.files = {k: escape_bytes(v) for k, v in defs.files.items()}
    defs.strings = {k: escape_bytes(v) for k, v in defs.strings.items()}
    defs.attributes = {escape_bytes(k): escape_bytes(v) for k, v in defs.attributes.items()}


def add_parser(sub) -> argparse.ArgumentParser:
    """Register the ``convert`` subcommand on an argparse subparsers object."""
    sp = sub.add_parser("convert", help="convert a trace (ours, EPILOG, EPIK, OTF2) to OTF2, Chrome JSON or .elg",
                        epilog="The Chrome JSON shows the trace's events; `expert-analyze TRACE --timeline OUT.json` "
                        "adds the wait states, arrows from their causes and the critical path.")
    sp.add_argument("src", metavar="IN", help="trace file or archive directory, any supported format")
    sp.add_argument("dst", metavar="OUT", help="output: a directory for otf2, a file for chrome and elg")
    sp.add_argument("--to", choices=FORMATS,
                    help="target format (default: from OUT: *.elg -> elg, *.json -> chrome, a name ending in "
                         "otf2 or an existing directory -> otf2)")
    sp.add_argument("--force", action="store_true", help="replace an existing OTF2 output directory")
    sp.set_defaults(func=cmd_convert)
    return sp


def target_format(dst: str) -> str | None:
    """The format an output name asks for (``--to`` left out), or None when the name does not say."""
    name = os.path.basename(os.path.normpath(dst)).lower()
    if name.endswith(".elg"):
        return "elg"
    if name.endswith(".json"):
        return "chrome"
    if name.endswith("otf2") or os.path.isdir(dst):
        return "otf2"
    return None


def cmd_convert(args) -> int:
    if args.to is None:
        args.to = target_format(args.dst)
        if args.to is None:
            print(f"expert-trace convert: error: cannot tell the target format from {args.dst!r}; give --to "
                  f"({', '.join(FORMATS)}) or name the output *.elg, *.json or *-otf2", file=sys.stderr)
            return 2
    try:
        notes = convert(args.src, args.dst, args.to, force=args.force)
    except OSError as exc:  # reading errors are TraceFormatErrors: this is the output
        print(f"expert-trace convert: error: {args.dst}: cannot write: {exc.strerror or exc}", file=sys.stderr)
        return 2
    for n in notes:
        print(f"note: {n}", file=sys.stderr)
    print(f"{args.src} -> {args.dst} ({args.to})")
    return 0
