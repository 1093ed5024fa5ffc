"""Names as bytes, as text, and as each output medium shows them.

A traced program's arguments, file and region names are bytes the runtime
never rejects; most are UTF-8, some are not (``caf\\xe9.dat`` from a Latin-1
shell).  Readers decode them with :func:`decode` (UTF-8 with Python's
``surrogateescape``: a byte that is not part of valid UTF-8 becomes the lone
surrogate ``U+DC80 + byte``), so no name makes a trace unreadable and the
writer (:func:`encode`) gives back the very same bytes.  Outputs escape what
their medium cannot carry:

* :func:`escape_bytes` for analysis results (cube names, JSON summaries,
  HTML): each undecodable byte, and each control character XML cannot
  carry (an escape, a NUL), becomes the four characters ``\\xNN``;
* :func:`printable` for terminals: also every character that is not
  printable (C0, DEL and C1 controls: escape sequences, carriage returns,
  newlines; separators, bidirectional overrides) becomes ``\\xNN``,
  ``\\uNNNN``, ``\\n``, ``\\r`` or ``\\t``, so a name can neither move
  the cursor nor forge a line of output.
"""

from __future__ import annotations

import re

__all__ = ["TerminalWriter", "decode", "encode", "escape_bytes", "printable"]

#: what results cannot carry: undecodable bytes, and the C0 controls XML 1.0 forbids even as references
_RESULT_UNSAFE = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\udc80-\udcff]")
_OTHER_SURROGATE = re.compile("[\ud800-\udfff]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def decode(raw: bytes) -> str:
    """UTF-8 text of ``raw``; bytes that are not valid UTF-8 become lone surrogates (lossless)."""
    return bytes(raw).decode("utf-8", "surrogateescape")


def encode(text: str) -> bytes:
    """The bytes :func:`decode` read ``text`` from."""
    return text.encode("utf-8", "surrogateescape")


def _hex(m: re.Match) -> str:
    c = m.group(0)
    if c in _NAMED:
        return _NAMED[c]
    o = ord(c)
    return f"\\x{o - 0xDC00 if 0xDC80 <= o <= 0xDCFF else o:02x}"


def escape_bytes(text: str) -> str:
    """``text`` as every result file can carry it: each byte that was not UTF-8, and each C0 control
    character but tab, newline and carriage return (XML 1.0 forbids them), as ``\\xNN``; other lone
    surrogates, which no decoded file holds, as U+FFFD."""
    if text.isascii() and text.isprintable():
        return text
    text = _RESULT_UNSAFE.sub(_hex, text)
    return _OTHER_SURROGATE.sub("\ufffd", text)


def _char(c: str) -> str:
    if c.isprintable():
        return c
    if c in _NAMED:
        return _NAMED[c]
    o = ord(c)
    if 0xDC80 <= o <= 0xDCFF:
        return f"\\x{o - 0xDC00:02x}"
    return f"\\x{o:02x}" if o < 0x100 else f"\\u{o:04x}" if o < 0x10000 else f"\\U{o:08x}"


def printable(text: str) -> str:
    """``text`` safe on a terminal: every character Python does not call printable (controls, undecodable
    bytes, line and paragraph separators, bidirectional overrides) as an escape."""
    if text.isprintable():
        return text
    return "".join(_char(c) for c in text)


_CONTROL_BUT_NEWLINE = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\udc80-\udcff]")


class TerminalWriter:
    """A text stream for reports that hold names: ``write`` escapes every control character but the
    newline, and every undecodable byte, as :func:`printable` does; the rest goes to ``stream`` as is."""

    def __init__(self, stream):
        self.stream = stream

    def write(self, text: str) -> int:
        if not (text.isascii() and text.replace("\n", "").isprintable()):
            text = _OTHER_SURROGATE.sub("\ufffd", _CONTROL_BUT_NEWLINE.sub(_hex, text))
        return self.stream.write(text)

    def flush(self) -> None:
        self.stream.flush()
