"""MPI file I/O: time in individual and collective MPI_File_* calls, and the operations and bytes they moved.

Names and tree as in Scalasca's ``MPI.pattern`` / ``MPI_File.pattern`` (mpi_io_individual and
mpi_io_collective under mpi_io; the mpi_file_ops and mpi_file_bytes trees of counts).  Scalasca 2.6
declares these metrics but computes none of them; ours are defined here and in docs/analysis.md
("MPI file I/O"):

* **collective** calls are those every process of the file's group makes: the ``_all`` and
  ``_ordered`` reads and writes (also their split ``_begin``/``_end`` halves and non-blocking
  ``i..._all`` forms) and the collective file management calls (open, close, set_size, preallocate,
  set_view, sync, set_atomicity, set_info); every other MPI_File_* call is **individual**.  The two
  split ``mpi_io`` exactly.
* the operation counts and bytes come from the MPI_FILE_IO events (format 2.2: one per read or write,
  the bytes it asked for, flagged collective or not) at the call path of the MPI_File_* call.  A trace
  whose MPI_File_* calls carry no such events (an older format, a foreign trace) did not measure them:
  the properties are "n/a" there, not 0.
"""

from __future__ import annotations

import numpy as np

from tracefmt.layout import FileIoFlag, Role

from .api import Pattern, Severity

#: MPI_File_* calls (name after ``MPI_File_``, lower case) that every process of the file's group makes
COLLECTIVE_MANAGEMENT = frozenset(("open", "close", "set_size", "preallocate", "set_view", "sync", "set_atomicity",
                                   "set_info"))


def is_collective_file_call(name: str) -> bool:
    """Whether the MPI_File_* region ``name`` is a collective file operation (see the module docstring)."""
    op = name.lower()
    if not op.startswith("mpi_file_"):
        return False
    op = op[len("mpi_file_"):]
    return "_all" in op or "_ordered" in op or op in COLLECTIVE_MANAGEMENT


def _file_io_cnodes(ctx) -> np.ndarray:
    """Boolean per call path: an MPI file I/O call (role MPI_FILE_IO)."""
    return ctx.cnode_role() == int(Role.MPI_FILE_IO)


def _collective_cnodes(ctx) -> np.ndarray:
    names = ctx.region_name
    collective = np.array([is_collective_file_call(str(n)) for n in names], bool)
    return _file_io_cnodes(ctx) & collective[ctx.calltree.region]


class _IoTime(Pattern):
    scope = "location"
    parent = "mpi_io"
    unit = "sec"
    requires = ()
    depends = ("mpi_io",)
    collective = False

    def compute(self, ctx):
        coll = _collective_cnodes(ctx)
        mask = coll if self.collective else _file_io_cnodes(ctx) & ~coll
        t = np.zeros_like(ctx.excl_time)
        t[mask] = ctx.results["mpi_io"][mask]
        return t


class MpiIoIndividual(_IoTime):
    name = "mpi_io_individual"
    display_name = "Individual"
    description = "Time spent in individual MPI file I/O calls (those one process makes on its own)."
    diagnosis = ("When many processes read or write one file, collective reads and writes (MPI_File_read_all, "
                 "..._write_at_all) let the MPI library merge their requests; compare the individual operation "
                 "counts.")


class MpiIoCollective(_IoTime):
    name = "mpi_io_collective"
    display_name = "Collective"
    description = ("Time spent in collective MPI file I/O calls (those every process of the file's group makes: "
                   "_all and _ordered transfers, open, close, set_view, sync, ...).")
    diagnosis = ("A collective call waits for its slowest member: compare the time per process and the bytes each "
                 "one moves for imbalance in the call or in the work before it.")
    collective = True


# --------------------------------------------------------------------------
# operation counts and bytes (MPI_FILE_IO events)
# --------------------------------------------------------------------------
def _unrecorded(ctx) -> str | None:
    """Why the operations were not measured: file reads or writes were made, but no MPI_FILE_IO event says so."""
    if len(ctx.table("mpi_file_ops")):
        return None
    reg = ctx.calltree.region
    names = ctx.region_name
    moved = np.array([("read" in str(n).lower() or "write" in str(n).lower()) for n in names], bool)[reg]
    made = _file_io_cnodes(ctx) & moved & (ctx.visits.sum(axis=1) > 0)
    if made.any():
        return "the trace has MPI file reads or writes but no MPI_FILE_IO records of their bytes (format 2.2)"
    return None


class _FileOps(Pattern):
    """Operations (unit occ) or bytes (unit bytes) of the mpi_file_ops rows whose flags match."""

    scope = "location"
    requires = ("mpi_file_ops",)
    depends = ()
    weigh_bytes = False
    collective: bool | None = None  # None: both
    direction: int = 0  # FileIoFlag.READ / WRITE, 0: both

    def unmeasured(self, ctx):
        return _unrecorded(ctx)

    def compute(self, ctx):
        T = ctx.table("mpi_file_ops")
        flags = T["flags"].astype(np.int64)
        keep = np.ones(len(T), bool)
        if self.collective is not None:
            keep &= ((flags & int(FileIoFlag.COLLECTIVE)) != 0) == self.collective
        if self.direction:
            keep &= (flags & self.direction) != 0
        keep &= T["cnode"] >= 0
        value = T["bytes"][keep].astype(np.float64) if self.weigh_bytes else np.ones(int(keep.sum()))
        return Severity(T["cnode"][keep].astype(np.int64), T["loc"][keep].astype(np.int64), value)


R, W = int(FileIoFlag.READ), int(FileIoFlag.WRITE)
_OPS_HINT = "Compare with the bytes they moved: many small operations are better merged into fewer."
_BYTES_HINT = "Compare the volume with the file I/O time to judge the bandwidth reached."


class MpiFileOps(_FileOps):
    name = "mpi_file_ops"
    parent = None
    paradigm = "mpi"
    display_name = "MPI file operations"
    unit = "occ"
    description = "Number of MPI file operations: reads and writes, one per MPI_File_* transfer call."
    diagnosis = _OPS_HINT
    collective = None
    direction = 0


class MpiFileIops(_FileOps):
    name = "mpi_file_iops"
    parent = "mpi_file_ops"
    display_name = "Individual"
    unit = "occ"
    description = "Number of individual MPI file reads and writes."
    diagnosis = _OPS_HINT
    collective = False
    direction = 0


class MpiFileIrops(_FileOps):
    name = "mpi_file_irops"
    parent = "mpi_file_iops"
    display_name = "Reads"
    unit = "occ"
    description = "Number of individual MPI file reads."
    diagnosis = _OPS_HINT
    collective = False
    direction = R


class MpiFileIwops(_FileOps):
    name = "mpi_file_iwops"
    parent = "mpi_file_iops"
    display_name = "Writes"
    unit = "occ"
    description = "Number of individual MPI file writes."
    diagnosis = _OPS_HINT
    collective = False
    direction = W


class MpiFileCops(_FileOps):
    name = "mpi_file_cops"
    parent = "mpi_file_ops"
    display_name = "Collective"
    unit = "occ"
    description = "Number of collective MPI file reads and writes."
    diagnosis = _OPS_HINT
    collective = True
    direction = 0


class MpiFileCrops(_FileOps):
    name = "mpi_file_crops"
    parent = "mpi_file_cops"
    display_name = "Reads"
    unit = "occ"
    description = "Number of collective MPI file reads."
    diagnosis = _OPS_HINT
    collective = True
    direction = R


class MpiFileCwops(_FileOps):
    name = "mpi_file_cwops"
    parent = "mpi_file_cops"
    display_name = "Writes"
    unit = "occ"
    description = "Number of collective MPI file writes."
    diagnosis = _OPS_HINT
    collective = True
    direction = W


class MpiFileBytes(_FileOps):
    name = "mpi_file_bytes"
    parent = None
    paradigm = "mpi"
    display_name = "MPI file bytes transferred"
    unit = "bytes"
    description = "Bytes read or written by MPI file operations (as asked: count x type size of each call)."
    diagnosis = _BYTES_HINT
    collective = None
    direction = 0
    weigh_bytes = True


class MpiFileIbytes(_FileOps):
    name = "mpi_file_ibytes"
    parent = "mpi_file_bytes"
    display_name = "Individual"
    unit = "bytes"
    description = "Bytes read or written by individual MPI file operations."
    diagnosis = _BYTES_HINT
    collective = False
    direction = 0
    weigh_bytes = True


class MpiFileIrbytes(_FileOps):
    name = "mpi_file_irbytes"
    parent = "mpi_file_ibytes"
    display_name = "Read"
    unit = "bytes"
    description = "Bytes read by individual MPI file operations."
    diagnosis = _BYTES_HINT
    collective = False
    direction = R
    weigh_bytes = True


class MpiFileIwbytes(_FileOps):
    name = "mpi_file_iwbytes"
    parent = "mpi_file_ibytes"
    display_name = "Written"
    unit = "bytes"
    description = "Bytes written by individual MPI file operations."
    diagnosis = _BYTES_HINT
    collective = False
    direction = W
    weigh_bytes = True


class MpiFileCbytes(_FileOps):
    name = "mpi_file_cbytes"
    parent = "mpi_file_bytes"
    display_name = "Collective"
    unit = "bytes"
    description = "Bytes read or written by collective MPI file operations."
    diagnosis = _BYTES_HINT
    collective = True
    direction = 0
    weigh_bytes = True


class MpiFileCrbytes(_FileOps):
    name = "mpi_file_crbytes"
    parent = "mpi_file_cbytes"
    display_name = "Read"
    unit = "bytes"
    description = "Bytes read by collective MPI file operations."
    diagnosis = _BYTES_HINT
    collective = True
    direction = R
    weigh_bytes = True


class MpiFileCwbytes(_FileOps):
    name = "mpi_file_cwbytes"
    parent = "mpi_file_cbytes"
    display_name = "Written"
    unit = "bytes"
    description = "Bytes written by collective MPI file operations."
    diagnosis = _BYTES_HINT
    collective = True
    direction = W
    weigh_bytes = True


IO_TIME_PATTERNS = [MpiIoIndividual, MpiIoCollective]
IO_COUNT_PATTERNS = [MpiFileOps, MpiFileIops, MpiFileIrops, MpiFileIwops, MpiFileCops, MpiFileCrops, MpiFileCwops,
                     MpiFileBytes, MpiFileIbytes, MpiFileIrbytes, MpiFileIwbytes, MpiFileCbytes, MpiFileCrbytes,
                     MpiFileCwbytes]
