"""Region naming conventions: from a region's name to its (paradigm, role).

The native format stores paradigm and role explicitly, so readers never need
this module.  It serves writers that only know names: the
:class:`~tracefmt.builder.TraceBuilder` and importers of traces from tools that
identify regions by name the way EPIK did (``MPI_Send``, ``!$omp parallel
@file.c:12``, ``omp_set_lock``, ``TRACING``).

Deliberate choices beyond EPIK's conventions:

* Non-blocking and persistent collectives (``MPI_Ibcast``, ``MPI_Bcast_init``)
  get the role of their blocking counterpart.
* Neighbourhood collectives count as all-to-all.
* ``!$omp`` names that are no known construct and ``omp_*`` API calls other
  than locks are (OPENMP, FUNCTION): OpenMP time, but in no wait-state class.
* MPI names are matched case-insensitively after the ``MPI_`` prefix, because
  Fortran bindings are often recorded in upper case (``MPI_SEND``).
"""

from __future__ import annotations

from .layout import Paradigm, Role

_MPI_P2P = frozenset(
    """send bsend ssend rsend isend ibsend issend irsend recv irecv sendrecv sendrecv_replace
    isendrecv isendrecv_replace wait waitall waitany waitsome test testall testany testsome
    probe iprobe mprobe improbe mrecv imrecv send_init bsend_init ssend_init rsend_init recv_init
    start startall request_free request_get_status cancel test_cancelled
    buffer_attach buffer_detach""".split()
)
_MPI_COLLECTIVES = {
    "barrier": Role.MPI_COLL_BARRIER,
    "bcast": Role.MPI_COLL_ONE2ALL,
    "scatter": Role.MPI_COLL_ONE2ALL,
    "scatterv": Role.MPI_COLL_ONE2ALL,
    "reduce": Role.MPI_COLL_ALL2ONE,
    "gather": Role.MPI_COLL_ALL2ONE,
    "gatherv": Role.MPI_COLL_ALL2ONE,
    "allreduce": Role.MPI_COLL_ALL2ALL,
    "allgather": Role.MPI_COLL_ALL2ALL,
    "allgatherv": Role.MPI_COLL_ALL2ALL,
    "alltoall": Role.MPI_COLL_ALL2ALL,
    "alltoallv": Role.MPI_COLL_ALL2ALL,
    "alltoallw": Role.MPI_COLL_ALL2ALL,
    "reduce_scatter": Role.MPI_COLL_ALL2ALL,
    "reduce_scatter_block": Role.MPI_COLL_ALL2ALL,
    "neighbor_allgather": Role.MPI_COLL_ALL2ALL,
    "neighbor_allgatherv": Role.MPI_COLL_ALL2ALL,
    "neighbor_alltoall": Role.MPI_COLL_ALL2ALL,
    "neighbor_alltoallv": Role.MPI_COLL_ALL2ALL,
    "neighbor_alltoallw": Role.MPI_COLL_ALL2ALL,
    "scan": Role.MPI_COLL_OTHER,
    "exscan": Role.MPI_COLL_OTHER,
}
_MPI_INIT_FINALIZE = frozenset({"init", "init_thread", "finalize"})
_MPI_RMA = frozenset(
    """put get accumulate get_accumulate fetch_and_op compare_and_swap
    rput rget raccumulate rget_accumulate""".split()
)

# "!$omp <construct>" after the " @file:line" suffix is removed; longest first
# so that "single sblock" wins over "single".
_OMP_CONSTRUCTS = [
    ("implicit barrier", Role.OMP_IMPLICIT_BARRIER),
    ("critical sblock", Role.OMP_CRITICAL_BODY),
    ("ordered sblock", Role.OMP_ORDERED_BODY),
    ("single sblock", Role.OMP_SINGLE_BODY),
    ("workshare", Role.OMP_WORKSHARE),
    ("taskwait", Role.OMP_TASKWAIT),
    ("taskgroup wait", Role.OMP_TASKWAIT),  # the wait at the end of a taskgroup
    ("taskgroup", Role.OMP_TASKGROUP),
    ("ibarrier", Role.OMP_IMPLICIT_BARRIER),
    ("parallel", Role.OMP_PARALLEL),
    ("sections", Role.OMP_SECTIONS),
    ("section", Role.OMP_SECTION),
    ("critical", Role.OMP_CRITICAL),
    ("barrier", Role.OMP_BARRIER),
    ("ordered", Role.OMP_ORDERED),
    ("single", Role.OMP_SINGLE),
    ("master", Role.OMP_MASTER),
    ("masked", Role.OMP_MASTER),
    ("atomic", Role.OMP_ATOMIC),
    ("flush", Role.OMP_FLUSH),
    ("task", Role.OMP_TASK),
    ("for", Role.OMP_LOOP),
    ("do", Role.OMP_LOOP),
]

# POSIX threads API calls (2.1), by name
_PTHREAD = {"pthread_create": Role.THREAD_CREATE, "pthread_join": Role.THREAD_JOIN,
            "pthread_tryjoin_np": Role.THREAD_JOIN, "pthread_timedjoin_np": Role.THREAD_JOIN}

_MEASUREMENT = {"TRACING": Role.MEASUREMENT_FLUSH, "PAUSING": Role.MEASUREMENT_PAUSE}


def _mpi_role(op: str) -> Role:
    if op in _MPI_P2P:
        return Role.MPI_POINT2POINT
    if op in _MPI_INIT_FINALIZE:
        return Role.MPI_INIT_FINALIZE
    base = op[:-5] if op.endswith("_init") else op  # persistent collectives (MPI 4)
    for candidate in (base, base[1:] if base.startswith("i") else None):
        if candidate in _MPI_COLLECTIVES:
            return _MPI_COLLECTIVES[candidate]
    if op.startswith("file_") or op == "register_datarep":
        return Role.MPI_FILE_IO
    if op.startswith("win_") or op in _MPI_RMA:
        return Role.MPI_RMA
    return Role.MPI_OTHER


def _omp_role(construct: str) -> Role:
    construct = " ".join(construct.split())  # collapse runs of blanks
    for word, role in _OMP_CONSTRUCTS:
        if construct == word or construct.startswith(word + " ") or construct.startswith(word + "("):
            return role
    return Role.FUNCTION


def classify(name: str) -> tuple[Paradigm, Role]:
    """The (paradigm, role) a region of this name has by convention.

    >>> classify("MPI_Allreduce")
    (<Paradigm.MPI: 3>, <Role.MPI_COLL_ALL2ALL: 14>)
    >>> classify("!$omp for @jacobi.c:42")
    (<Paradigm.OPENMP: 4>, <Role.OMP_LOOP: 31>)
    """
    if name in _MEASUREMENT:
        return Paradigm.MEASUREMENT, _MEASUREMENT[name]
    if name[:4].upper() == "MPI_" and len(name) > 4:
        return Paradigm.MPI, _mpi_role(name[4:].lower())
    if name[:5].lower() == "!$omp":
        construct = name[5:].split(" @", 1)[0].strip().lower()
        return Paradigm.OPENMP, _omp_role(construct)
    if name.startswith("omp_"):
        if name.endswith("_lock") or name.endswith("_lock_with_hint"):
            return Paradigm.OPENMP, Role.OMP_LOCK_API
        return Paradigm.OPENMP, Role.FUNCTION
    if name.startswith("pthread_"):
        if name in _PTHREAD:
            return Paradigm.PTHREAD, _PTHREAD[name]
        if name.startswith("pthread_mutex_"):
            return Paradigm.PTHREAD, Role.THREAD_MUTEX
        if name.startswith("pthread_cond_"):
            return Paradigm.PTHREAD, Role.THREAD_CONDITION
        return Paradigm.PTHREAD, Role.THREAD_MANAGEMENT
    return Paradigm.USER, Role.FUNCTION
