"""Decompression with an output cap: no gzip or zlib stream inflates past what its format can hold.

A 261 kB gzip stream can inflate to gigabytes.  Every reader that
decompresses (EPILOG files, CUBE archives and their members) goes through
:func:`inflate`, which stops as soon as the output passes the cap the
caller derives from the input size and the format, and raises
:class:`InflateError` (a ``ValueError``) with one line saying why; a damaged
stream is an ``InflateError`` too, never a ``zlib.error``.
"""

from __future__ import annotations

import zlib

__all__ = ["InflateError", "inflate", "gzip_cap", "GZIP_MAGIC"]

GZIP_MAGIC = b"\x1f\x8b"
_CHUNK = 1 << 20


class InflateError(ValueError):
    """A compressed stream is damaged (``bomb`` False) or would inflate past its cap (``bomb`` True)."""

    def __init__(self, message: str, bomb: bool = False):
        super().__init__(message)
        self.bomb = bomb


def gzip_cap(compressed_size: int, ratio: int, floor: int) -> int:
    """The output cap ``max(floor, ratio * compressed_size)``."""
    return max(int(floor), int(ratio) * int(compressed_size))


def inflate(data: bytes, cap: int, gzip: bool = True) -> bytearray:
    """The decompressed ``data`` (a gzip stream of one or more members, or with ``gzip=False`` one zlib
    stream), at most ``cap`` bytes; :class:`InflateError` if it is damaged, truncated or longer.

    The output is the bytearray it was gathered in: ``bytes(out)`` would copy it, twice the output at the
    peak."""
    out = bytearray()
    view = memoryview(data)
    while True:
        d = zlib.decompressobj(zlib.MAX_WBITS | 16 if gzip else zlib.MAX_WBITS)
        pending = view
        try:
            while True:
                chunk = d.decompress(pending, min(_CHUNK, cap - len(out) + 1))
                out += chunk
                if len(out) > cap:
                    raise InflateError(f"decompresses to more than {cap} bytes (the most this input can hold; "
                                       f"a decompression bomb?)", bomb=True)
                pending = d.unconsumed_tail
                if d.eof:
                    break
                if not pending and not chunk:
                    raise InflateError("compressed stream is truncated (it ends before its end mark)")
        except zlib.error as exc:
            raise InflateError(f"damaged compressed stream: {exc}") from None
        rest = d.unused_data
        if not gzip or not rest:
            return out
        if rest[:2] != GZIP_MAGIC:
            if rest.strip(b"\0"):
                raise InflateError(f"{len(rest)} bytes of garbage after the compressed stream")
            return out
        view = memoryview(rest)
