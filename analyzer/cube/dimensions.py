"""The cube's vocabulary: what a metric, a region and a location are, and the cube's errors.

These records describe the three dimensions of a :class:`analyzer.cube.Cube`
(metric tree, the regions of the call tree, system tree) independently of
any file format; the model (:mod:`.model`) validates and queries them, the
format modules read and write them.
"""

from __future__ import annotations

from dataclasses import dataclass

UNITS = ("sec", "occ", "bytes")
DTYPES = ("FLOAT", "INTEGER")
#: how values of a metric combine along the call tree and over locations;
#: "min"/"max" only occur in files from other tools (CUBE's MINDOUBLE/MAXDOUBLE)
AGGREGATIONS = ("sum", "min", "max")


class CubeError(ValueError):
    """A cube is inconsistent (bad shapes, ids, names) or cannot be written."""


class CubeFormatError(CubeError):
    """A cube file cannot be read; the message names the file, member and offset."""


#: cube attribute per location whose events the trace does not hold (an OTF2 location file missing or
#: unreadable): ``ABSENT_LOCATION_ATTR + "rank R thread T"`` = why.  Its values in the cube are 0 because
#: nothing was measured there: reports show them as n/a
ABSENT_LOCATION_ATTR = "expert-analyze::absent-location::"


def absent_locations(attrs: dict[str, str]) -> dict[str, str]:
    """``{"rank R thread T": why}`` of the locations a cube's attributes mark absent (ABSENT_LOCATION_ATTR)."""
    n = len(ABSENT_LOCATION_ATTR)
    return {k[n:]: v for k, v in attrs.items() if k.startswith(ABSENT_LOCATION_ATTR)}


# --------------------------------------------------------------------------
# Dimension records
# --------------------------------------------------------------------------
@dataclass(frozen=True, slots=True)  # slots: a cube read may hold hundreds of thousands of each
class MetricInfo:
    """One performance property (CUBE metric).

    ``name`` is the unique name (CUBE ``uniq_name``, e.g. ``mpi_latesender``),
    ``parent`` the unique name of the parent property or ``None`` for a root.
    ``dtype`` is ``"FLOAT"`` (severities, written as CUBE ``DOUBLE``) or
    ``"INTEGER"`` (counts, written as ``UINT64``).
    """

    name: str
    display_name: str = ""
    parent: str | None = None
    unit: str = "sec"
    description: str = ""
    diagnosis: str = ""
    dtype: str = "FLOAT"
    url: str = ""
    aggregation: str = "sum"

    def __post_init__(self):
        if self.parent == "":
            object.__setattr__(self, "parent", None)
        if not self.display_name:
            object.__setattr__(self, "display_name", self.name)


@dataclass(frozen=True, slots=True)
class RegionInfo:
    """A code region (function, MPI call, OpenMP construct).

    ``paradigm`` and ``role`` are CUBE's strings (see :func:`region_strings`).
    Lines are -1 when unknown.
    """

    name: str
    file: str = ""
    begin_line: int = -1
    end_line: int = -1
    paradigm: str = "unknown"
    role: str = "unknown"
    description: str = ""


@dataclass(frozen=True, slots=True)
class LocationInfo:
    """One location (a thread of a process) and where it ran.

    ``rank`` is the process (MPI rank), ``thread`` the thread number within
    the process.  ``name`` and ``process_name`` default to ``thread N`` /
    ``rank N`` when written.
    """

    machine: str = "machine"
    node: str = "node"
    rank: int = 0
    thread: int = 0
    name: str = ""
    process_name: str = ""

    @property
    def key(self) -> str:
        """The location's key in the JSON summary: ``"rank R thread T"``."""
        return f"rank {self.rank} thread {self.thread}"

    @property
    def thread_name(self) -> str:
        return self.name or f"thread {self.thread}"

    @property
    def group_name(self) -> str:
        return self.process_name or f"rank {self.rank}"


# --------------------------------------------------------------------------
# tracefmt Paradigm/Role -> CUBE strings
# --------------------------------------------------------------------------
# CUBE's role vocabulary is the one Score-P and Scalasca write (and that
# Scalasca's remapping rules match on): "function", "loop", "point2point",
# "barrier", "one2all", "implicit barrier", "critical sblock", ...
_PARADIGM_STRINGS = {0: "unknown", 1: "user", 2: "compiler", 3: "mpi", 4: "openmp", 5: "measurement", 6: "pthread"}
_ROLE_STRINGS = {
    0: "function",  # FUNCTION
    1: "user",  # USER_REGION (Score-P's name for SCOREP_REGION_USER)
    2: "loop",  # LOOP
    10: "point2point",  # MPI_POINT2POINT
    11: "barrier",  # MPI_COLL_BARRIER
    12: "one2all",  # MPI_COLL_ONE2ALL
    13: "all2one",  # MPI_COLL_ALL2ONE
    14: "all2all",  # MPI_COLL_ALL2ALL
    15: "other collective",  # MPI_COLL_OTHER (Scan, Exscan)
    16: "function",  # MPI_INIT_FINALIZE: CUBE has no role for it; classified by name
    17: "file io",  # MPI_FILE_IO
    18: "rma",  # MPI_RMA
    19: "function",  # MPI_OTHER
    30: "parallel",
    31: "loop",
    32: "sections",
    33: "section",
    34: "single",
    35: "single sblock",
    36: "master",
    37: "workshare",
    38: "critical",
    39: "critical sblock",
    40: "atomic",
    41: "barrier",
    42: "implicit barrier",
    43: "flush",
    44: "ordered",
    45: "ordered sblock",
    46: "wrapper",  # OMP_LOCK_API: Score-P marks omp_*_lock as wrapper regions
    47: "task",
    48: "taskwait",
    49: "taskwait",  # OMP_TASKGROUP: the wait at the end of a taskgroup
    60: "artificial",  # MEASUREMENT_FLUSH
    61: "artificial",  # MEASUREMENT_PAUSE
    70: "thread create",  # THREAD_CREATE (Score-P's names for pthread_create / pthread_join)
    71: "thread wait",  # THREAD_JOIN
    72: "wrapper",  # THREAD_MANAGEMENT
    73: "wrapper",  # THREAD_MUTEX: Score-P marks pthread_mutex_* as wrapper regions
    74: "wrapper",  # THREAD_CONDITION
}


def region_strings(paradigm: int, role: int) -> tuple[str, str]:
    """CUBE ``(paradigm, role)`` strings for ``tracefmt.layout.Paradigm`` / ``Role`` codes.

    Unknown codes map to ``"unknown"`` so that a newer trace never breaks
    writing a cube.
    """
    return _PARADIGM_STRINGS.get(int(paradigm), "unknown"), _ROLE_STRINGS.get(int(role), "unknown")


# --------------------------------------------------------------------------
# Values container: a dict whose missing metrics read as zeros
# --------------------------------------------------------------------------
