"""What the analysis shares send each other, as bytes: payloads and failures.

:func:`split` / :func:`join` turn any payload (a dict of numpy columns, a tuple of them, a small python
object) into a pickled header and the raw buffers of its numpy arrays (pickle protocol 5 out of band),
so that columns travel (``mpi_network``) and are written (``spill``) without a copy through pickle.
:func:`portable_error` / :func:`raise_portable` carry a failure of one rank to rank 0 with its trace
file and location.  :func:`world` is the communicator of ``--mpi``.
"""

from __future__ import annotations

import pickle

from analyzer.replay.engine import ReplayError
from tracefmt.errors import TraceFormatError

__all__ = ["split", "join", "portable_error", "raise_portable", "world"]


def world():
    """``MPI.COMM_WORLD``, or a clear error when mpi4py is missing."""
    try:
        from mpi4py import MPI
    except ImportError as exc:  # the optional extra is not installed
        raise RuntimeError("--mpi needs the optional mpi4py package: pip install 'expert-analyze[mpi]' "
                           f"({exc})") from None
    return MPI.COMM_WORLD


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
