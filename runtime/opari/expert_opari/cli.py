"""expert-instrument: OPARI-style source-to-source OpenMP instrumentation of C, C++ and Fortran (free and fixed form).

Rewrites OpenMP directives into calls of the POMP interface (``runtime/include/pomp.h``) after the
transformation rules of the POMP/OPARI paper (seed 001, Tables 1 and 2): c_rewriter.py for C and C++,
fortran.py for Fortran.  The output starts with ``#include <pomp.h>`` (which defines ``_POMP``) and the
descriptors, and uses ``#line`` directives (line markers in Fortran) so that compiler messages and debug
information point at the original source.  Only the standard library is used, so the tool runs with any
``python3``.
"""

from __future__ import annotations

import argparse
import os
import sys

from .c_rewriter import instrument_source
from .descriptors import table_path
from .directives import CONSTRUCTS, InstrumentError, check_disabled
from .fortran import FIXED_WIDTH, FORTRAN_EXT, instrument_fortran, is_fixed_form, is_fortran

__all__ = ["InstrumentError", "instrument_source", "instrument_file", "default_output", "main"]


def default_output(path: str) -> str:
    stem, ext = os.path.splitext(path)
    return f"{stem}.pomp{ext or '.c'}"


def instrument_file(src: str, out: str | None = None, disabled=(), line_path: str | None = None,
                    fixed_width: int = FIXED_WIDTH) -> str:
    """Instrument ``src`` into ``out`` (default ``<stem>.pomp<ext>``); returns the output path.
    Fixed-form Fortran (.f/.F/.for/.ftn) ends its statements at column ``fixed_width``."""
    try:
        with open(src, encoding="utf-8", errors="surrogateescape") as f:
            text = f.read()
    except OSError as exc:
        raise InstrumentError(src, 0, f"cannot read: {exc.strerror}") from None
    out = out or default_output(src)
    if is_fortran(src):  # Fortran (free or fixed form): the descriptors go into a C table beside the output
        check_disabled(disabled)
        result, table = instrument_fortran(text, line_path or src, frozenset(disabled), is_fixed_form(src),
                                           fixed_width)
        with open(table_path(out), "w", encoding="utf-8", errors="surrogateescape") as f:
            f.write(table)
    else:
        result = instrument_source(text, line_path or src, disabled)
    with open(out, "w", encoding="utf-8", errors="surrogateescape") as f:
        f.write(result)
    return out


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(
        prog="expert-instrument",
        description="Rewrite the OpenMP directives of a C/C++ or Fortran source into POMP calls "
                    "(OPARI-style); for Fortran (.f90/.F90/...) a C descriptor table <out stem>_tab.c is "
                    "written beside the output and must be compiled and linked too. "
                    "Compile the result with -I <runtime>/include and link it against the expert runtime, "
                    "or let expert-cc do all of this.")
    ap.add_argument("source", help="C, C++ or Fortran (free or fixed form) source file")
    ap.add_argument("-o", "--output", help="output file (default: <stem>.pomp<ext> beside the source; - for stdout)")
    ap.add_argument("--disable", default="", metavar="LIST",
                    help=f"comma-separated constructs to leave uninstrumented: {', '.join(CONSTRUCTS)}")
    ap.add_argument("--line-path", help="file name written into #line directives and descriptors "
                                        "(default: the source path as given)")
    args = ap.parse_args(argv)
    disabled = [c.strip() for c in args.disable.split(",") if c.strip()]
    try:
        if args.output == "-" and args.source.endswith(tuple(FORTRAN_EXT)):
            raise ValueError("a Fortran source needs an output file: its descriptor table is written beside it")
        if args.output == "-":
            with open(args.source, encoding="utf-8", errors="surrogateescape") as f:
                text = f.read()
            sys.stdout.write(instrument_source(text, args.line_path or args.source, disabled))
        else:
            instrument_file(args.source, args.output, disabled, args.line_path)
    except InstrumentError as exc:
        print(f"expert-instrument: {exc}", file=sys.stderr)
        return 1
    except (ValueError, OSError) as exc:
        print(f"expert-instrument: {exc}", file=sys.stderr)
        return 2
    return 0
