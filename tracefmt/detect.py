"""Open any supported trace by its content: ``tracefmt.detect.open_any(path)``.

Detection is by magic bytes and archive layout (not by a file's name):

* native format: a file starting with ``b"\\x89ELG\\r\\n\\x1a\\n"``;
* EPILOG 1.x: a file starting with ``b"EPILOG\\0"`` (also gzip-compressed), or
  an EPIK experiment directory (``epik.esd`` or ``epik.elg`` inside);
* OTF2: an anchor file ``NAME.otf2`` with its global definitions
  ``NAME.def`` beside it, or a directory holding one.
"""

from __future__ import annotations

import gzip
import os
import zlib

from .errors import TraceFormatError
from .layout import MAGIC as NATIVE_MAGIC

EPILOG_MAGIC = b"EPILOG\0"
GZIP_MAGIC = b"\x1f\x8b"


def _head(path: str, n: int = 16) -> bytes:
    try:
        with open(path, "rb") as f:
            head = f.read(n)
            if head[:2] == GZIP_MAGIC:
                f.seek(0)
                try:
                    with gzip.GzipFile(fileobj=f) as g:
                        return g.read(n)
                except (OSError, EOFError, zlib.error):  # damaged: the reader words it
                    return head
            return head
    except OSError as exc:
        raise TraceFormatError(f"cannot open: {exc.strerror or exc}", path=path) from None


def _is_otf2_anchor(path: str) -> bool:
    # an OTF2 anchor file is a small text-free binary written by the OTF2 library; it is
    # always accompanied by '<name>.def' and the '<name>/' directory of event files
    base, ext = os.path.splitext(path)
    return ext == ".otf2" and os.path.isfile(base + ".def")


def detect(path: str | os.PathLike) -> str:
    """'native', 'epilog', 'epik' or 'otf2' (TraceFormatError if none fits)."""
    path = os.fspath(path)
    if os.path.isdir(path):
        if os.path.isfile(os.path.join(path, "epik.esd")) or os.path.isfile(os.path.join(path, "epik.elg")):
            return "epik"
        if any(_is_otf2_anchor(os.path.join(path, n)) for n in os.listdir(path)):
            return "otf2"
        raise TraceFormatError("a directory that is neither an EPIK archive (no epik.esd) nor an OTF2 "
                               "archive (no *.otf2 anchor with its .def)", path=path)
    if not os.path.exists(path):
        from .merge import missing_trace_note  # a crashed MPI run leaves per-process traces instead

        raise TraceFormatError("no such file or directory" + missing_trace_note(path), path=path)
    if not os.path.isfile(path):  # reading a FIFO or a device to sniff its head would block or never end
        raise TraceFormatError("not a regular file", path=path)
    head = _head(path)
    if head.startswith(NATIVE_MAGIC):
        return "native"
    if head.startswith(EPILOG_MAGIC) or head.startswith(GZIP_MAGIC):  # a damaged gzip stream: only EPILOG is one
        return "epilog"
    if _is_otf2_anchor(path):
        return "otf2"
    raise TraceFormatError(f"unknown trace format (first bytes {head[:8]!r}); expected our .elg, EPILOG 1.x, "
                           f"an EPIK directory or an OTF2 anchor", path=path)


def open_any(path: str | os.PathLike, verify: bool = True):
    """A :class:`tracefmt.Trace` for any supported input (foreign formats are converted in memory)."""
    kind = detect(path)
    if kind == "native":
        from .reader import open as open_native

        return open_native(path, verify=verify)
    if kind in ("epilog", "epik"):
        from . import epilog

        return epilog.read(path).to_trace()
    from . import otf2_native  # our own decoder; otf2_in (the otf2 package) is the tests' reference

    return otf2_native.open_otf2(path)
