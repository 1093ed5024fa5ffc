"""The carrier of ``--memory``: every share in this process, one after another, with disk as the network.

:meth:`SpillNetwork.post` writes a share's outbox at once, one file per payload (a payload for
:data:`~analyzer.distributed.network.EVERY` share is written once); :meth:`~SpillNetwork.inbox` reads the
files addressed to a share, in source order; :meth:`~SpillNetwork.keep` writes a share's state and
drops it.  The network holds file names only, so between stages nothing of a share stays in memory: at
any time the data in memory is the running share's state, inbox and outbox.

A file is a payload's pickled header followed by the raw bytes of its numpy arrays
(``payload.split``): columns are written from their own memory and read straight into
fresh arrays, never copied through pickle.  ``spilled_bytes`` / ``read_bytes`` / ``spill_seconds`` say
what spilling cost (written, read, and the time spent serialising, writing and reading).
"""

from __future__ import annotations

import os
import pickle
import shutil
import struct
import tempfile
import time
from typing import Any

import numpy as np

from .payload import join, split

from .network import EVERY, Inbox, Network, Outbox

__all__ = ["SpillNetwork", "read_payload", "write_payload"]

_LEN = struct.Struct("<Q")


def write_payload(path: str, obj) -> int:
    """Write ``obj`` to ``path`` (header, then its arrays' raw bytes); returns the bytes written."""
    header, buffers = split(obj)
    meta = pickle.dumps((len(header), [b.nbytes for b in buffers]), protocol=5)
    with open(path, "wb") as f:
        f.write(_LEN.pack(len(meta)))
        f.write(meta)
        f.write(header)
        for b in buffers:
            f.write(b)
    return _LEN.size + len(meta) + len(header) + sum(b.nbytes for b in buffers)


def _read_exactly(f, buf) -> None:
    view = memoryview(buf).cast("B")
    got = 0
    while got < len(view):  # one read() returns at most ~2 GiB on Linux
        n = f.readinto(view[got:])
        if not n:
            raise OSError(f"{f.name}: spill file ends early ({got} of {len(view)} bytes)")
        got += n


def read_payload(path: str) -> tuple[Any, int]:
    """The object :func:`write_payload` wrote to ``path`` and the bytes read; every array owns fresh memory."""
    with open(path, "rb", buffering=0) as f:
        head = bytearray(_LEN.size)
        _read_exactly(f, head)
        meta = bytearray(_LEN.unpack(head)[0])
        _read_exactly(f, meta)
        header_len, lengths = pickle.loads(meta)
        header = bytearray(header_len)
        _read_exactly(f, header)
        buffers = []
        for n in lengths:
            b = np.empty(n, dtype=np.uint8)
            _read_exactly(f, b)
            buffers.append(b)
    return join(header, buffers), _LEN.size + len(meta) + header_len + sum(lengths)


class SpillNetwork(Network):
    """``n_shares`` shares in this process; payloads and states on disk in a new folder under ``directory``
    (None: the system's temporary folder), removed by :meth:`close` (also when used as a context manager).
    ``spilled_bytes``: bytes written, ``read_bytes``: bytes read, ``spill_seconds``: wall time spent
    serialising, writing and reading."""

    keeps_states = False

    def __init__(self, directory, n_shares: int):
        self.n_shares = int(n_shares)
        self.local = list(range(self.n_shares))
        if directory is not None:
            os.makedirs(directory, exist_ok=True)
        self.directory = tempfile.mkdtemp(prefix="expert-spill-", dir=directory)
        self.spilled_bytes = 0  # written
        self.read_bytes = 0
        self.spill_seconds = 0.0
        self._generation = 0
        # share -> [(kind, path for every share | [path or None per destination])]: names only, no data
        self._posted: dict[int, list] = {}
        self._delivered: dict[int, list] = {}
        self._states: set[int] = set()

    # -- files ------------------------------------------------------------------------------------
    def _write(self, path: str, obj) -> None:
        t = time.perf_counter()
        self.spilled_bytes += write_payload(path, obj)
        self.spill_seconds += time.perf_counter() - t

    def _read(self, path: str):
        t = time.perf_counter()
        obj, n = read_payload(path)
        self.read_bytes += n
        self.spill_seconds += time.perf_counter() - t
        return obj

    def _generation_dir(self, generation: int) -> str:
        return os.path.join(self.directory, f"stage{generation}")

    @staticmethod
    def _remove(entries: list) -> None:
        for _, where in entries:
            for path in [where] if isinstance(where, str) else where:
                if path is not None and os.path.exists(path):
                    os.remove(path)

    # -- the Network API --------------------------------------------------------------------------
    def post(self, share: int, outbox: Outbox) -> None:
        share = int(share)
        if share in self._posted:  # posted again: the new outbox replaces the old one, as in memory
            self._remove(self._posted.pop(share))
        folder = self._generation_dir(self._generation)
        os.makedirs(folder, exist_ok=True)
        entries = []
        for i, (kind, payloads) in enumerate(outbox.items()):
            base = os.path.join(folder, f"from{share}_kind{i}")
            if isinstance(payloads, dict):
                p = payloads.get(EVERY)
                path = None
                if p is not None:
                    path = f"{base}_every.bin"
                    self._write(path, p)
                entries.append((kind, path if path is not None else [None] * self.n_shares))
                continue
            if len(payloads) != self.n_shares:
                raise ValueError(f"outbox of share {share}, kind {kind!r}: {len(payloads)} payloads for "
                                 f"{self.n_shares} shares")
            paths: list = []
            for d, p in enumerate(payloads):
                if p is None:
                    paths.append(None)
                    continue
                paths.append(f"{base}_to{d}.bin")
                self._write(paths[-1], p)
            entries.append((kind, paths))
        self._posted[share] = entries

    def flush(self, error: BaseException | None = None) -> None:
        if error is not None:  # one process: the stage's own error, with its file and location
            raise error
        for entries in self._delivered.values():  # read by every share by now
            self._remove(entries)
        old = self._generation_dir(self._generation - 1)
        if os.path.isdir(old):
            shutil.rmtree(old)
        self._delivered, self._posted = self._posted, {}
        self._generation += 1

    def inbox(self, share: int) -> Inbox:
        share = int(share)
        out: Inbox = {}
        for src in sorted(self._delivered):
            for kind, where in self._delivered[src]:
                path = where if isinstance(where, str) else where[share]
                out.setdefault(kind, [None] * self.n_shares)[src] = None if path is None else self._read(path)
        return out

    def _state_path(self, share: int) -> str:
        return os.path.join(self.directory, f"state{int(share)}.bin")

    def keep(self, share: int, state: Any) -> None:
        path = self._state_path(share)
        self._write(path + ".new", state)
        os.replace(path + ".new", path)  # the old state stays whole until the new one is
        self._states.add(int(share))

    def state(self, share: int) -> Any:
        if int(share) not in self._states:
            return None
        return self._read(self._state_path(share))

    def close(self) -> None:
        shutil.rmtree(self.directory, ignore_errors=True)
        self._posted, self._delivered, self._states = {}, {}, set()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
