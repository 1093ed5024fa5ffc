"""Moving the analysis ranks' data without MPI's 2 GiB message limit, and their errors intact.

mpi4py's ``comm.gather`` pickles each object into one message whose length is a C ``int``: a share
of more than 2 GiB (the table rows of a large trace) cannot be sent that way.  Here each rank's
share is already bytes; the lengths go first (one small gather), then every rank sends its bytes to
the root as raw buffers of at most :data:`CHUNK` bytes, which the root receives straight into one
buffer per rank, rank by rank (no copy through pickle on the way).

:func:`split` / :func:`join` turn any payload (a dict of numpy columns, a tuple of them, a small python
object) into a pickled header and the raw buffers of its numpy arrays (pickle protocol 5 out of band),
so that columns travel and are written without a copy through pickle (analyzer.distributed's carriers).
:func:`portable_error` / :func:`raise_portable` carry a failure of one rank to rank 0 with its trace
file and location.
"""

from __future__ import annotations

import pickle

from tracefmt.errors import TraceFormatError

from .engine import ReplayError

#: largest single message (bytes): well under the 2 GiB a C int can count
CHUNK = 1 << 30
_TAG = 0x4558  # "EX": the only point-to-point messages of the analysis


def gather_bytes(comm, payload: bytes, root: int = 0, chunk: int = CHUNK) -> list[bytes | bytearray] | None:
    """Every rank's ``payload`` on ``root`` (index = rank), None on the other ranks.  Collective."""
    from mpi4py import MPI

    sizes = comm.gather(len(payload), root=root)
    if comm.rank != root:
        view = memoryview(payload)
        for off in range(0, len(payload), chunk):
            comm.Send([view[off:off + chunk], MPI.BYTE], dest=root, tag=_TAG)
        return None
    out = []
    for rank, size in enumerate(sizes):
        if rank == root:
            out.append(payload)  # its own share as it is: no copy of what may be the largest piece
            continue
        buf = bytearray(size)
        view = memoryview(buf)
        for off in range(0, size, chunk):
            comm.Recv([view[off:off + chunk], MPI.BYTE], source=rank, tag=_TAG)
        out.append(buf)
    return out


def split(obj) -> tuple[bytes, list[memoryview]]:
    """``obj`` as a pickled header and the raw bytes of its contiguous numpy arrays (not copied: views of
    the arrays' memory, which must stay unchanged until they are sent or written)."""
    buffers: list = []
    header = pickle.dumps(obj, protocol=5, buffer_callback=buffers.append)
    return header, [b.raw() for b in buffers]


def join(header, buffers):
    """The object :func:`split` gave ``header`` and ``buffers`` for; its arrays are views of ``buffers``
    (give each its own writable memory, e.g. ``np.empty(n, np.uint8)``, and the arrays own nothing else)."""
    return pickle.loads(header, buffers=buffers)


def portable_error(exc: BaseException):
    """An exception as plain fields, so that it unpickles on rank 0 with its message intact."""
    if isinstance(exc, TraceFormatError):
        return ("replay" if isinstance(exc, ReplayError) else "trace", exc.reason, exc.path, exc.location,
                exc.block, exc.offset)
    return ("other", f"{type(exc).__name__}: {exc}", None, None, None, None)


def raise_portable(err, rank: int):
    """Raise what :func:`portable_error` made of rank ``rank``'s failure: a trace error as itself (file,
    location), anything else as a RuntimeError naming the rank."""
    kind, reason, path, location, block, offset = err
    if kind == "other":
        raise RuntimeError(f"analysis rank {rank} failed: {reason}")
    cls = ReplayError if kind == "replay" else TraceFormatError
    raise cls(reason, path=path, location=location, block=block, offset=offset)
