"""The carrier of ``--mpi``: one share per MPI rank, outboxes delivered by an all-to-all exchange.

:meth:`MpiNetwork.flush` moves every rank's outbox in three steps:

1. every rank turns each payload it sends to another rank into a pickled header and the raw bytes of
   its numpy arrays (``payload.split``: columns are not copied through pickle), once per
   payload (a payload for every share is split once and its buffers sent to each rank);
2. one ``alltoall`` of small python lists tells each rank every rank's failure and what comes from each
   other rank: the kinds in the source's order and, per payload, the lengths of its header and buffers,
   or, where all a rank sends another is at most :data:`INLINE` bytes, the payloads themselves (the
   rounds of the root-cause analysis send a few numbers each: one collective per round);
3. every rank receives each buffer into memory of its own (so a column keeps no other column alive) by
   point-to-point messages of at most :data:`CHUNK` bytes, all posted at once and completed together:
   no message or call passes the 2 GiB a C ``int`` can count, and the number of messages per pair is
   the pair's bytes / CHUNK plus one per non-empty buffer.

A rank's payload for itself is handed over as it is (as :class:`~analyzer.distributed.network.MemoryNetwork`
does).  Failures: before any payload moves the all-to-all (and, where buffers travel apart, an ``allgather``
once the receive buffers are allocated) tells every rank which ranks failed; then every rank raises instead of exchanging, rank 0 the
first failing rank's error (a trace error with its file and location, see
``payload.portable_error``) and the others :class:`ShareFailed`.  Headers are unpickled
in :meth:`~MpiNetwork.inbox`, inside the stage's error handling of
:func:`~analyzer.distributed.network.run_stages`, so a failure there is reported like a stage's.
"""

from __future__ import annotations

import contextlib
import pickle
import time
from typing import Any

import numpy as np

from .payload import join, portable_error, raise_portable, split

from .network import EVERY, Inbox, Network, Outbox, ShareFailed

__all__ = ["CHUNK", "TRAFFIC", "MpiNetwork"]

#: largest single message (bytes): well under the 2 GiB a C int can count (tests patch it to a few bytes)
CHUNK = 1 << 30
#: what a rank sends one other rank in a flush travels inside the all-to-all up to this many bytes
INLINE = 1 << 16
_TAG = 0x4E57  # "NW"; on a communicator of its own, so no other message of the program can match
#: what this process's networks exchanged, summed over them (benchmarks/rank_peak.py reads it): bytes and
#: point-to-point messages sent and received, flushes, and the wall seconds spent in them (waiting included)
TRAFFIC = {"bytes_sent": 0, "bytes_received": 0, "messages": 0, "flushes": 0, "flush_seconds": 0.0}


class _Received:
    """A payload as it arrived: its pickled header and its buffers, unpickled on first use."""

    __slots__ = ("header", "buffers")

    def __init__(self, header: bytearray, buffers: list):
        self.header, self.buffers = header, buffers


def _pieces(segment, chunk: int):
    view = memoryview(segment).cast("B")
    return [view[off:off + chunk] for off in range(0, len(view), chunk)]


class MpiNetwork(Network):
    """Share ``comm.rank`` of ``comm.size``; collective: every rank constructs, flushes and closes it."""

    def __init__(self, comm):
        self.comm = comm.Dup()  # its messages cannot meet any other point-to-point traffic of the program
        self.n_shares = self.comm.size
        self.rank = self.comm.rank
        self.local = [self.rank]
        self._posted: Outbox | None = None
        self._inbox: Inbox = {}
        self._state: Any = None
        # what the exchange cost (this rank): bytes and point-to-point messages sent and received
        self.sent_bytes = 0
        self.received_bytes = 0
        self.messages = 0
        self.largest_message = 0

    def post(self, share: int, outbox: Outbox) -> None:
        if share != self.rank:
            raise ValueError(f"MPI rank {self.rank} runs share {self.rank}, not {share}")
        self._posted = outbox

    # -- the exchange -----------------------------------------------------------------------------
    def _plan(self, outbox: Outbox):
        """What this rank sends: per destination the meta list and the segments, and its own payloads."""
        k, me = self.n_shares, self.rank
        metas: list = [[] for _ in range(k)]
        segments: list[list] = [[] for _ in range(k)]
        own: list = []
        splits: dict[int, tuple] = {}  # id(payload) -> (header, buffers): a payload sent to many is split once
        for kind, payloads in outbox.items():
            if isinstance(payloads, dict):
                payloads = [payloads.get(EVERY)] * k
            elif len(payloads) != k:
                raise ValueError(f"outbox of share {me}, kind {kind!r}: {len(payloads)} payloads for {k} shares")
            for d, p in enumerate(payloads):
                if d == me:
                    own.append((kind, p))
                    continue
                if p is None:
                    metas[d].append((kind, None))
                    continue
                if id(p) not in splits:
                    splits[id(p)] = split(p)
                header, buffers = splits[id(p)]
                metas[d].append((kind, (len(header), [b.nbytes for b in buffers])))
                segments[d].append(header)
                segments[d].extend(buffers)
        metas[me] = None
        return metas, segments, own

    def _check(self, error: BaseException | None) -> None:
        """One allgather of the ranks' failures; if any, every rank raises (rank 0 the first's)."""
        errors = self.comm.allgather(None if error is None else portable_error(error))
        failed = [r for r, e in enumerate(errors) if e is not None]
        if not failed:
            return
        first = failed[0]
        if self.rank != 0:
            raise ShareFailed(f"analysis rank {first} failed") from error
        if first == 0:
            raise error
        raise_portable(errors[first], first)

    def flush(self, error: BaseException | None = None) -> None:
        t0 = time.perf_counter()
        sent, received, messages = self.sent_bytes, self.received_bytes, self.messages
        try:
            if getattr(self, "_sparse", False):
                self._exchange_sparse(error)
            else:
                self._exchange(error)
        finally:
            TRAFFIC["bytes_sent"] += self.sent_bytes - sent
            TRAFFIC["bytes_received"] += self.received_bytes - received
            TRAFFIC["messages"] += self.messages - messages
            TRAFFIC["flushes"] += 1
            TRAFFIC["flush_seconds"] += time.perf_counter() - t0

    def _exchange(self, error: BaseException | None) -> None:
        from mpi4py import MPI

        chunk = int(CHUNK)
        outbox, self._posted = self._posted or {}, None
        self._inbox = {}
        plan = None
        if error is None:
            try:
                plan = self._plan(outbox)
            except Exception as exc:  # e.g. a payload that cannot be pickled: reported like a stage's failure
                error = exc
        # one all-to-all tells every rank every rank's failure, what comes from each rank, and whether any rank
        # sends buffers apart; what is small travels in it (the rounds of the root-cause analysis exchange a few
        # numbers per round: one collective each, not three and point-to-point messages)
        k = self.n_shares
        failure = None if error is None else portable_error(error)
        inline = [False] * k
        if plan is not None:
            metas, segments, own = plan
            for d in range(k):
                if d != self.rank and sum(len(memoryview(g).cast("B")) for g in segments[d]) <= INLINE:
                    inline[d] = True
                    metas[d] = self._inline(metas[d], segments[d])
                    segments[d] = []
        apart = plan is not None and any(segments[d] for d in range(k) if d != self.rank)
        incoming = self.comm.alltoall([(failure, apart, None if plan is None or d == self.rank else plan[0][d])
                                       for d in range(k)])
        errors = [x[0] for x in incoming]
        if any(e is not None for e in errors):
            self._raise(errors, error)
        received: dict[int, list] = {}
        receives: list = []  # (source, piece) in the order the source sends them
        try:
            for src, (_, _, meta) in enumerate(incoming):
                if src == self.rank:
                    continue
                entries = received[src] = []
                for kind, info in meta:
                    if info is None:
                        entries.append((kind, None))
                    elif isinstance(info[0], bytes):  # it came along: header and buffers
                        entries.append((kind, _Received(bytearray(info[0]),
                                                        [np.frombuffer(b, np.uint8).copy() for b in info[1]])))
                        self.received_bytes += len(info[0]) + sum(len(b) for b in info[1])
                    else:
                        header_len, lengths = info
                        got = _Received(bytearray(header_len), [np.empty(n, dtype=np.uint8) for n in lengths])
                        entries.append((kind, got))
                        for seg in [got.header, *got.buffers]:
                            receives.extend((src, piece) for piece in _pieces(seg, chunk))
        except Exception as exc:  # out of memory for what arrives: no rank may start sending
            error = exc
        if any(x[1] for x in incoming):  # buffers travel apart: every rank first says it could take what comes
            self._check(error)
        elif error is not None:
            raise error
        requests = [self.comm.Irecv([piece, MPI.BYTE], source=src, tag=_TAG) for src, piece in receives]
        for dest, segs in enumerate(segments):
            for seg in segs:
                for piece in _pieces(seg, chunk):
                    requests.append(self.comm.Isend([piece, MPI.BYTE], dest=dest, tag=_TAG))
                    self.messages += 1
                    self.sent_bytes += len(piece)
                    self.largest_message = max(self.largest_message, len(piece))
        if requests:
            MPI.Request.Waitall(requests)
        self.received_bytes += sum(len(piece) for _, piece in receives)
        del requests, receives, segments, plan
        inbox: Inbox = {}
        for src in range(self.n_shares):
            for kind, p in (own if src == self.rank else received[src]):
                inbox.setdefault(kind, [None] * self.n_shares)[src] = p
        self._inbox = inbox

    def _inline(self, meta: list, segs: list) -> list:
        """``meta`` with each payload's header and buffers as bytes (they travel in the all-to-all)."""
        out, at = [], 0
        for kind, info in meta:
            if info is None:
                out.append((kind, None))
                continue
            header = bytes(memoryview(segs[at]).cast("B"))
            bufs = [bytes(memoryview(segs[at + 1 + j]).cast("B")) for j in range(len(info[1]))]
            at += 1 + len(info[1])
            self.sent_bytes += len(header) + sum(len(b) for b in bufs)
            out.append((kind, (header, bufs)))
        return out

    def _raise(self, errors: list, error: BaseException | None) -> None:
        """Every rank raises: rank 0 the first failing rank's error, the others ShareFailed."""
        first = next(r for r, e in enumerate(errors) if e is not None)
        if self.rank != 0:
            raise ShareFailed(f"analysis rank {first} failed") from error
        if first == 0 and error is not None:
            raise error
        raise_portable(errors[first], first)

    # -- rounds: few, small payloads -----------------------------------------------------------------
    def agree(self, values: dict) -> np.ndarray:
        from mpi4py import MPI

        mine = np.asarray(values[self.rank], np.int64)
        out = np.empty_like(mine)
        self.comm.Allreduce(mine, out, op=MPI.MAX)
        return out

    @contextlib.contextmanager
    def small_payloads(self):
        """Flushes send only the payloads that exist, pickled, each to its destination (a round of the
        root-cause analysis sends a few to a few shares: an all-to-all would carry K x K entries per round,
        mostly empty), and end with a non-blocking barrier once this rank's sends were received (the
        sparse exchange of Hoefler, Siebert and Lumsdaine, PPoPP 2010): O(messages) plus a barrier."""
        self._sparse = True
        try:
            yield
        finally:
            self._sparse = False

    def _exchange_sparse(self, error: BaseException | None) -> None:
        from mpi4py import MPI

        outbox, self._posted = self._posted or {}, None
        k, me = self.n_shares, self.rank
        by_dest: list[list] = [[] for _ in range(k)]
        own: list = []
        failure = None if error is None else portable_error(error)
        if failure is None:
            try:
                for kind, payloads in outbox.items():
                    if isinstance(payloads, dict):
                        payloads = [payloads.get(EVERY)] * k
                    elif len(payloads) != k:
                        raise ValueError(f"outbox of share {me}, kind {kind!r}: {len(payloads)} payloads for {k} "
                                         f"shares")
                    for d, p in enumerate(payloads):
                        if p is not None:
                            (own if d == me else by_dest[d]).append((kind, p))
            except Exception as exc:
                failure = portable_error(exc)
                error = exc
        # a failing rank tells every rank (each then raises after the exchange, as the all-to-all would)
        msgs = [(d, ("failed", failure)) for d in range(k) if d != me] if failure is not None else \
            [(d, ("ok", entries)) for d, entries in enumerate(by_dest) if entries]
        reqs, keep = [], []
        for d, m in msgs:
            data = pickle.dumps(m, protocol=5)  # sent as bytes: counted like the all-to-all's
            keep.append(data)
            reqs.append(self.comm.Issend([data, MPI.BYTE], dest=d, tag=_TAG))
            self.messages += 1
            self.sent_bytes += len(data)
            self.largest_message = max(self.largest_message, len(data))
        received: dict[int, list] = {}
        errors = [None] * k
        errors[me] = failure
        barrier = None
        status = MPI.Status()
        while True:
            if self.comm.Iprobe(source=MPI.ANY_SOURCE, tag=_TAG, status=status):
                src = status.Get_source()
                buf = bytearray(status.Get_count(MPI.BYTE))
                self.comm.Recv([buf, MPI.BYTE], source=src, tag=_TAG)
                self.received_bytes += len(buf)
                what, body = pickle.loads(buf)
                if what == "failed":
                    errors[src] = body
                else:
                    received[src] = body
                continue
            if barrier is None:
                if MPI.Request.Testall(reqs):
                    barrier = self.comm.Ibarrier()
            elif barrier.Test():
                break
        del keep
        if any(e is not None for e in errors):
            self._raise(errors, error)
        inbox: Inbox = {}
        for src in range(k):
            for kind, p in (own if src == me else received.get(src, ())):
                inbox.setdefault(kind, [None] * k)[src] = p
        self._inbox = inbox

    def inbox(self, share: int) -> Inbox:
        if share != self.rank:
            raise ValueError(f"MPI rank {self.rank} runs share {self.rank}, not {share}")
        for payloads in self._inbox.values():
            for i, p in enumerate(payloads):
                if isinstance(p, _Received):  # the arrays are views of the received buffers: no copy
                    payloads[i] = join(p.header, p.buffers)
        return self._inbox

    def keep(self, share: int, state: Any) -> None:
        if share != self.rank:
            raise ValueError(f"MPI rank {self.rank} runs share {self.rank}, not {share}")
        self._state = state

    def state(self, share: int) -> Any:
        if share != self.rank:
            raise ValueError(f"MPI rank {self.rank} runs share {self.rank}, not {share}")
        return self._state

    def close(self) -> None:
        """Free the network's communicator (collective) and what it holds."""
        self._inbox, self._state, self._posted = {}, None, None
        if self.comm is not None:
            self.comm.Free()
            self.comm = None
