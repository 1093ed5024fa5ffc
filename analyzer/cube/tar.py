"""The tar container of CUBE4 ``.cubex`` files and the magic numbers of its members.

A ``.cubex`` file is an uncompressed POSIX tar archive of flat members:
``anchor.xml`` and, per metric, ``<id>.index`` and ``<id>.data``.  This
module scans such archives tolerantly (:func:`scan_tar`, for the reader and
the checker) and writes them reproducibly (:func:`write_tar`, for the writer).
"""

from __future__ import annotations

import io
import tarfile

from .model import CubeError, CubeFormatError

TAR_BLOCK = 512
INDEX_MAGIC = b"CUBEX.INDEX"
DATA_MAGIC = b"CUBEX.DATA"
ZDATA_MAGIC = b"ZCUBEX.DATA"
INDEX_SPARSE = 1
INDEX_DENSE = 3
INDEX_NONE = 0


def write_tar(f, members: list[tuple[str, bytes]]) -> None:
    """Write ``members`` (name, bytes) as a USTAR archive with fixed mtime and owner (reproducible bytes)."""
    with tarfile.open(fileobj=f, mode="w", format=tarfile.USTAR_FORMAT) as tar:
        for name, data in members:
            if len(data) and len(data) % TAR_BLOCK == 0:  # guarded by construction; keep the invariant explicit
                raise CubeError(f"internal error: member {name} is {len(data)} bytes, a multiple of 512")
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mtime = 0
            info.mode = 0o644
            info.uid = info.gid = 0
            info.uname = info.gname = ""
            tar.addfile(info, io.BytesIO(data))


class TarMember:
    """Where a member's data and header lie in the archive."""

    __slots__ = ("name", "offset", "size", "header_offset")

    def __init__(self, name, offset, size, header_offset):
        self.name, self.offset, self.size, self.header_offset = name, offset, size, header_offset


def octal(field: bytes, what: str, where: str) -> int:
    """A number field of a tar header: octal text, or GNU base-256 for big numbers."""
    if field and field[0] & 0x80:  # GNU base-256 for big numbers
        return int.from_bytes(field[1:], "big")
    s = field.split(b"\0", 1)[0].strip()
    try:
        return int(s, 8) if s else 0
    except ValueError:
        raise CubeFormatError(f"{where}: tar header field {what} is not an octal number: {field!r}") from None


def scan_tar(buf, where: str, problems: list[str]) -> dict[str, TarMember]:
    """Members of an uncompressed tar in ``buf`` (bytes or mmap).

    Tolerant like the CUBE readers: checksums are checked but only reported,
    all-zero blocks are skipped (cubelib writes one after every member whose
    size is a multiple of 512, which standard readers take for the end).
    """
    members: dict[str, TarMember] = {}
    pos = 0
    n = len(buf)
    pax_size = None
    long_name = None
    while pos + TAR_BLOCK <= n:
        hdr = bytes(buf[pos : pos + TAR_BLOCK])
        if hdr == b"\0" * TAR_BLOCK:
            pos += TAR_BLOCK
            continue
        name = hdr[0:100].split(b"\0", 1)[0]
        magic = hdr[257:263]
        if magic[:5] != b"ustar":
            if not members:
                raise CubeFormatError(f"{where}: not a tar archive (no ustar header at byte 0)")
            problems.append(f"{where}: unreadable tar header at byte {pos}; members after it are ignored")
            break
        prefix = hdr[345:500].split(b"\0", 1)[0] if magic == b"ustar\x00" else b""
        size = octal(hdr[124:136], "size", f"{where} byte {pos}")
        chksum = octal(hdr[148:156], "chksum", f"{where} byte {pos}")
        actual = sum(hdr[:148]) + 8 * 32 + sum(hdr[156:])
        if chksum != actual:
            problems.append(f"{where}: tar header at byte {pos} has a wrong checksum (ignored)")
        typeflag = hdr[156:157]
        data_off = pos + TAR_BLOCK
        if data_off + size > n:
            raise CubeFormatError(
                f"{where}: tar member {name.decode('utf-8', 'replace')!r} at byte {pos} claims {size} bytes "
                f"but the file ends at byte {n} (truncated file?)"
            )
        if typeflag == b"x":  # PAX extended header: only size/path matter here
            for rec in bytes(buf[data_off : data_off + size]).decode("utf-8", "replace").split("\n"):
                kv = rec.split(" ", 1)[-1]
                if kv.startswith("size="):
                    pax_size = int(kv[5:])
                elif kv.startswith("path="):
                    long_name = kv[5:]
        elif typeflag == b"L":  # GNU long name
            long_name = bytes(buf[data_off : data_off + size]).split(b"\0", 1)[0].decode("utf-8", "replace")
        elif typeflag in (b"0", b"\0", b"7"):
            full = long_name or (prefix + b"/" + name if prefix else name).decode("utf-8", "replace")
            if pax_size is not None:
                size = pax_size
            members[full] = TarMember(full, data_off, size, pos)
            pax_size = long_name = None
        pos = data_off + (size + TAR_BLOCK - 1) // TAR_BLOCK * TAR_BLOCK
    return members
