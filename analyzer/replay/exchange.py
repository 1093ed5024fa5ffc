"""Gathering the analysis ranks' shares without MPI's 2 GiB message limit.

mpi4py's ``comm.gather`` pickles each object into one message whose length is a C ``int``: a share
of more than 2 GiB (the table rows of a large trace) cannot be sent that way.  Here each rank's
share is already bytes; the lengths go first (one small gather), then every rank sends its bytes to
the root as raw buffers of at most :data:`CHUNK` bytes, which the root receives straight into one
buffer per rank, rank by rank (no copy through pickle on the way).
"""

from __future__ import annotations

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
