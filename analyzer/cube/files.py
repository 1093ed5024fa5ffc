"""Read any result file by its content: our ``.cubex``, CUBE3, HDF5, or a JSON summary.

The tools that take "a result" (``expert-diff``, ``expert-check``,
``expert-report``) do not trust file names: :func:`result_kind` looks at the
first bytes, :func:`open_cube` reads a cube file of any of our cube formats
and :func:`read_result` also accepts a JSON summary.  Every failure is a
:class:`ResultFileError` whose message names the file and says what is wrong
in one line (missing, a directory, unreadable, empty, not a result).
"""

from __future__ import annotations

import os
import zlib

from .cubex_read import read_cube3, read_cubex
from .hdf5 import read_hdf5
from .json_summary import loads
from .model import Cube, CubeFormatError

#: what :func:`peek` reads of a file to tell its kind
HEAD_BYTES = 512
HDF5_MAGIC = b"\x89HDF\r\n\x1a\n"
GZIP_MAGIC = b"\x1f\x8b"


class ResultFileError(CubeFormatError):
    """A result file cannot be used: missing, a directory, unreadable, empty or not a result."""


def peek(path, expected: str = "a .cubex or .json result") -> bytes:
    """The first bytes of ``path``; ``expected`` completes the message for a directory."""
    path = os.fspath(path)
    if not os.path.exists(path):
        raise ResultFileError(f"{path}: no such file")
    if os.path.isdir(path):
        raise ResultFileError(f"{path}: is a directory, expected {expected}")
    if not os.path.isfile(path):  # reading a FIFO would block, a device (/dev/urandom) never end
        raise ResultFileError(f"{path}: not a regular file (a FIFO, device or socket), expected {expected}")
    try:
        with open(path, "rb") as f:
            return f.read(HEAD_BYTES)
    except OSError as e:
        raise ResultFileError(f"{path}: cannot read: {e.strerror}") from None


def result_kind(head: bytes) -> str:
    """``"json"``, ``"hdf5"``, ``"cube3"`` (XML, also gzip-compressed) or ``"cubex"`` (anything else)."""
    text = head.lstrip()[:1]
    if text in (b"{", b"["):
        return "json"
    if head.startswith(HDF5_MAGIC):
        return "hdf5"
    if head.startswith(GZIP_MAGIC):  # a .cube.gz, or a gzip-compressed .cubex archive
        try:
            head = zlib.decompressobj(16 + zlib.MAX_WBITS).decompress(head)
        except zlib.error:
            return "cubex"
        text = head.lstrip()[:1]
    return "cube3" if text == b"<" else "cubex"


_READERS = {"cubex": (read_cubex, "CUBE4 file"), "cube3": (read_cube3, "CUBE3 file"), "hdf5": (read_hdf5, "HDF5 cube")}


def open_cube(path, head: bytes | None = None) -> Cube:
    """The cube in a ``.cubex`` (ours, Scalasca's, Score-P's), CUBE3 or HDF5 file, told apart by content."""
    path = os.fspath(path)
    kind = result_kind(peek(path) if head is None else head)
    reader, what = _READERS.get(kind, _READERS["cubex"])
    try:
        return reader(path)
    except Exception as e:  # the reader's own errors (and h5py's): report them in one line
        raise ResultFileError(f"{path}: not a readable {what}: {e}") from None


def read_json_summary(path):
    """The JSON document in ``path`` (a summary from ``expert-analyze --json``); its shape is not checked."""
    path = os.fspath(path)
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except UnicodeDecodeError as e:
        raise ResultFileError(f"{path}: invalid JSON: {e}") from None
    except OSError as e:
        raise ResultFileError(f"{path}: cannot read: {e.strerror}") from None
    try:
        return loads(text, path)
    except CubeFormatError as e:
        raise ResultFileError(str(e)) from None


def read_result(path, expected: str = "a .cubex or .json result"):
    """A :class:`Cube` from a cube file, else the JSON document of a summary (unchecked), by the file's content."""
    head = peek(path, expected)
    if not head:
        raise ResultFileError(f"{os.fspath(path)}: empty file")
    if result_kind(head) == "json":
        return read_json_summary(path)
    return open_cube(path, head)
