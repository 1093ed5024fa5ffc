"""Writes genuine EPILOG 1.x files for the reader tests, record by record.

Layouts follow ../shared/reference/epilog-1.9-and-scalasca-conventions.md §1:
a 10-byte header (``EPILOG\\0``, major, minor, byte order), then records of
one length byte, one type byte and the body.  Event bodies are
``[lid u4] time d8 fields...``; the location id is written only when the
writer is told to (merged and thread-merged traces have it, single-thread
per-rank traces do not).
"""

from __future__ import annotations

import gzip
import os
import struct

NO_ID = 0xFFFFFFFF


class ElgWriter:
    def __init__(self, big_endian: bool = False, version: tuple[int, int] = (1, 9), lids: bool = True):
        self.e = ">" if big_endian else "<"
        self.version = version
        self.lids = lids
        self.buf = bytearray(b"EPILOG\0" + bytes([version[0], version[1], 2 if big_endian else 1]))

    # -- framing ------------------------------------------------------------
    def raw(self, rtype: int, body: bytes) -> None:
        assert len(body) <= 255, f"record body of {len(body)} bytes does not fit"
        self.buf += bytes([len(body), rtype]) + body

    def rec(self, rtype: int, fmt: str, *vals) -> None:
        self.raw(rtype, struct.pack(self.e + fmt, *vals))

    def save(self, path, compress: bool = False) -> str:
        path = os.fspath(path)
        data = bytes(self.buf)
        with open(path, "wb") as f:
            f.write(gzip.compress(data) if compress else data)
        return path

    # -- definitions --------------------------------------------------------
    def string(self, sid: int, text: str) -> None:
        raw = text.encode() + b"\0"
        head, rest = raw[:250], raw[250:]
        chunks = [rest[i : i + 255] for i in range(0, len(rest), 255)]
        self.raw(1, struct.pack(self.e + "IB", sid, len(chunks)) + head)
        for c in chunks:
            self.raw(2, c)

    def machine(self, mid, nodec, name_sid):
        self.rec(3, "III", mid, nodec, name_sid)

    def node(self, nid, mid, cpuc, name_sid, clock_rate=1e9):
        if self.version >= (1, 1):
            self.rec(4, "IIIId", nid, mid, cpuc, name_sid, clock_rate)
        else:
            self.rec(4, "IIII", nid, mid, cpuc, name_sid)

    def process(self, pid, name_sid):
        self.rec(5, "II", pid, name_sid)

    def thread(self, tid, pid, name_sid):
        self.rec(6, "III", tid, pid, name_sid)

    def location(self, lid, mid, nid, pid, tid):
        self.rec(7, "IIIII", lid, mid, nid, pid, tid)

    def file(self, fid, name_sid):
        self.rec(8, "II", fid, name_sid)

    def region(self, rid, name_sid, fid, begln, endln, descr_sid, rtype):
        self.rec(9, "IIIIIIB", rid, name_sid, fid, begln, endln, descr_sid, rtype)

    def metric(self, metid, name_sid, descr_sid, dtype=0, mode=0, iv=0):
        self.rec(10, "IIIBBB", metid, name_sid, descr_sid, dtype, mode, iv)

    def mpi_comm_bits(self, cid, ranks, mode=0):
        nbytes = max(ranks) // 8 + 1 if ranks else 0
        bits = bytearray(nbytes)
        for r in ranks:
            bits[r // 8] |= 1 << (r % 8)
        if self.version >= (1, 3):
            head = struct.pack(self.e + "IBI", cid, mode, nbytes)
        else:
            head = struct.pack(self.e + "II", cid, nbytes)
        room = 255 - len(head)
        self.raw(11, head + bytes(bits[:room]))
        rest = bits[room:]
        for i in range(0, len(rest), 255):
            self.raw(19, bytes(rest[i : i + 255]))

    def mpi_group(self, gid, ranks, mode=0):
        head = struct.pack(self.e + "IBI", gid, mode, len(ranks))
        vals = struct.pack(self.e + f"{len(ranks)}I", *ranks)
        room = (255 - len(head)) // 4 * 4
        self.raw(27, head + vals[:room])
        rest = vals[room:]
        for i in range(0, len(rest), 252):
            self.raw(28, rest[i : i + 252])

    def mpi_comm_ref(self, cid, gid):
        self.rec(29, "II", cid, gid)

    def offset(self, ltime, offset):
        self.rec(12, "dd", ltime, offset)

    def last_def(self):
        self.raw(13, b"")

    def num_events(self, n):
        self.rec(14, "I", n)

    def call_site(self, csid, fid, lno, erid, lrid):
        self.rec(15, "IIIII", csid, fid, lno, erid, lrid)

    def map_section(self, rank):
        self.rec(23, "I", rank)

    def map_offset(self, rank, offset):
        self.rec(24, "II", rank, offset)

    def idmap(self, etype, mapping, sparse=False):
        if sparse:
            vals = [v for pair in sorted(mapping.items()) for v in pair]
            count = len(mapping)
        else:
            vals, count = list(mapping), len(mapping)
        head = struct.pack(self.e + "BBI", etype, 1 if sparse else 0, count)
        data = struct.pack(self.e + f"{len(vals)}I", *vals)
        room = (255 - len(head)) // 4 * 4
        self.raw(25, head + data[:room])
        rest = data[room:]
        for i in range(0, len(rest), 252):
            self.raw(26, rest[i : i + 252])

    # -- events ---------------------------------------------------------------
    def _ev(self, rtype, lid, t, fmt="", *vals, metv=(), metv_first=False):
        e = self.e
        body = struct.pack(e + "I", lid) if self.lids else b""
        body += struct.pack(e + "d", t)
        m = struct.pack(e + f"{len(metv)}Q", *metv) if metv else b""
        fields = struct.pack(e + fmt, *vals) if fmt else b""
        body += (m + fields) if metv_first else (fields + m)
        self.raw(rtype, body)

    def enter(self, lid, t, rid, metv=()):
        self._ev(101, lid, t, "I", rid, metv=metv)

    def enter_cs(self, lid, t, csid, metv=()):
        self._ev(111, lid, t, "I", csid, metv=metv)

    def exit(self, lid, t, metv=()):
        self._ev(102, lid, t, metv=metv)

    def send(self, lid, t, dest, cid, tag, nbytes):
        self._ev(103, lid, t, "IIII", dest, cid, tag, nbytes)

    def recv(self, lid, t, src, cid, tag):
        self._ev(104, lid, t, "III", src, cid, tag)

    def mpi_collexit(self, lid, t, root, cid, sent, recvd, metv=()):
        self._ev(105, lid, t, "IIII", root, cid, sent, recvd, metv=metv, metv_first=True)

    def omp_fork(self, lid, t):
        self._ev(106, lid, t)

    def omp_join(self, lid, t):
        self._ev(107, lid, t)

    def omp_alock(self, lid, t, lkid):
        self._ev(108, lid, t, "I", lkid)

    def omp_rlock(self, lid, t, lkid):
        self._ev(109, lid, t, "I", lkid)

    def omp_collexit(self, lid, t, metv=()):
        self._ev(110, lid, t, metv=metv)

    def send_complete(self, lid, t, reqid):
        self._ev(132, lid, t, "I", reqid)

    def recv_request(self, lid, t, reqid):
        self._ev(133, lid, t, "I", reqid)

    def attr_ui4(self, lid, attrtype, val):
        body = struct.pack(self.e + "I", lid) if self.lids else b""
        self.raw(61, body + struct.pack(self.e + "BI", attrtype, val))

    def put_1ts(self, lid, t, dest, wid, rmaid, nbytes):
        self._ev(112, lid, t, "IIII", dest, wid, rmaid, nbytes)


class Strings:
    """Assigns string ids in first-use order and writes STRING records."""

    def __init__(self, w: ElgWriter):
        self.w, self.ids = w, {}

    def __call__(self, text: str) -> int:
        if text not in self.ids:
            self.ids[text] = len(self.ids)
            self.w.string(self.ids[text], text)
        return self.ids[text]
