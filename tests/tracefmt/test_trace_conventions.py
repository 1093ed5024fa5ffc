"""Region-name conventions: every documented name class maps to its (paradigm, role)."""

import pytest

from tracefmt.conventions import classify
from tracefmt.layout import Paradigm as P
from tracefmt.layout import Role as R

CASES = [
    ("MPI_Send", P.MPI, R.MPI_POINT2POINT),
    ("MPI_Issend", P.MPI, R.MPI_POINT2POINT),
    ("MPI_Recv", P.MPI, R.MPI_POINT2POINT),
    ("MPI_Irecv", P.MPI, R.MPI_POINT2POINT),
    ("MPI_Waitall", P.MPI, R.MPI_POINT2POINT),
    ("MPI_Testsome", P.MPI, R.MPI_POINT2POINT),
    ("MPI_Sendrecv", P.MPI, R.MPI_POINT2POINT),
    ("MPI_Iprobe", P.MPI, R.MPI_POINT2POINT),
    ("MPI_Barrier", P.MPI, R.MPI_COLL_BARRIER),
    ("MPI_Ibarrier", P.MPI, R.MPI_COLL_BARRIER),
    ("MPI_Bcast", P.MPI, R.MPI_COLL_ONE2ALL),
    ("MPI_Scatterv", P.MPI, R.MPI_COLL_ONE2ALL),
    ("MPI_Iscatter", P.MPI, R.MPI_COLL_ONE2ALL),
    ("MPI_Reduce", P.MPI, R.MPI_COLL_ALL2ONE),
    ("MPI_Gatherv", P.MPI, R.MPI_COLL_ALL2ONE),
    ("MPI_Ireduce", P.MPI, R.MPI_COLL_ALL2ONE),
    ("MPI_Allreduce", P.MPI, R.MPI_COLL_ALL2ALL),
    ("MPI_Allgatherv", P.MPI, R.MPI_COLL_ALL2ALL),
    ("MPI_Alltoallw", P.MPI, R.MPI_COLL_ALL2ALL),
    ("MPI_Reduce_scatter", P.MPI, R.MPI_COLL_ALL2ALL),
    ("MPI_Reduce_scatter_block", P.MPI, R.MPI_COLL_ALL2ALL),
    ("MPI_Iallgather", P.MPI, R.MPI_COLL_ALL2ALL),
    ("MPI_Scan", P.MPI, R.MPI_COLL_OTHER),
    ("MPI_Exscan", P.MPI, R.MPI_COLL_OTHER),
    ("MPI_Iexscan", P.MPI, R.MPI_COLL_OTHER),
    ("MPI_Init", P.MPI, R.MPI_INIT_FINALIZE),
    ("MPI_Init_thread", P.MPI, R.MPI_INIT_FINALIZE),
    ("MPI_Finalize", P.MPI, R.MPI_INIT_FINALIZE),
    ("MPI_File_write_all", P.MPI, R.MPI_FILE_IO),
    ("MPI_Win_fence", P.MPI, R.MPI_RMA),
    ("MPI_Put", P.MPI, R.MPI_RMA),
    ("MPI_Get_accumulate", P.MPI, R.MPI_RMA),
    ("MPI_Accumulate", P.MPI, R.MPI_RMA),
    ("MPI_Comm_split", P.MPI, R.MPI_OTHER),
    ("MPI_Group_incl", P.MPI, R.MPI_OTHER),
    ("MPI_SEND", P.MPI, R.MPI_POINT2POINT),  # Fortran-style upper case
    ("!$omp parallel @jacobi.c:62", P.OPENMP, R.OMP_PARALLEL),
    ("!$omp for @jacobi.c:64", P.OPENMP, R.OMP_LOOP),
    ("!$omp do", P.OPENMP, R.OMP_LOOP),
    ("!$omp sections", P.OPENMP, R.OMP_SECTIONS),
    ("!$omp section", P.OPENMP, R.OMP_SECTION),
    ("!$omp single", P.OPENMP, R.OMP_SINGLE),
    ("!$omp single sblock @a.f90:3", P.OPENMP, R.OMP_SINGLE_BODY),
    ("!$omp master", P.OPENMP, R.OMP_MASTER),
    ("!$omp masked", P.OPENMP, R.OMP_MASTER),
    ("!$omp workshare", P.OPENMP, R.OMP_WORKSHARE),
    ("!$omp critical", P.OPENMP, R.OMP_CRITICAL),
    ("!$omp critical [update]", P.OPENMP, R.OMP_CRITICAL),
    ("!$omp critical sblock @x.c:9", P.OPENMP, R.OMP_CRITICAL_BODY),
    ("!$omp atomic", P.OPENMP, R.OMP_ATOMIC),
    ("!$omp barrier @x.c:1", P.OPENMP, R.OMP_BARRIER),
    ("!$omp ibarrier @x.c:1", P.OPENMP, R.OMP_IMPLICIT_BARRIER),
    ("!$omp implicit barrier", P.OPENMP, R.OMP_IMPLICIT_BARRIER),
    ("!$omp flush", P.OPENMP, R.OMP_FLUSH),
    ("!$omp ordered", P.OPENMP, R.OMP_ORDERED),
    ("!$omp ordered sblock", P.OPENMP, R.OMP_ORDERED_BODY),
    ("!$omp task", P.OPENMP, R.OMP_TASK),
    ("!$omp taskwait", P.OPENMP, R.OMP_TASKWAIT),
    ("omp_set_lock", P.OPENMP, R.OMP_LOCK_API),
    ("omp_unset_nest_lock", P.OPENMP, R.OMP_LOCK_API),
    ("omp_test_lock", P.OPENMP, R.OMP_LOCK_API),
    ("omp_init_lock", P.OPENMP, R.OMP_LOCK_API),
    ("TRACING", P.MEASUREMENT, R.MEASUREMENT_FLUSH),
    ("PAUSING", P.MEASUREMENT, R.MEASUREMENT_PAUSE),
    ("main", P.USER, R.FUNCTION),
    ("compute_flux", P.USER, R.FUNCTION),
    ("MPI_", P.USER, R.FUNCTION),  # a prefix alone is not an MPI function
    ("tracing", P.USER, R.FUNCTION),  # the measurement names are exact
]


@pytest.mark.parametrize("name,paradigm,role", CASES)
def test_classify(name, paradigm, role):
    assert classify(name) == (paradigm, role)


def test_parallel_is_not_confused_with_longer_names():
    # "!$omp parallel for" is EPIK's combined construct: the parallel region
    assert classify("!$omp parallel for @a.c:1")[1] == R.OMP_PARALLEL
    # "sections" must not be read as "section"
    assert classify("!$omp sections @a.c:1")[1] == R.OMP_SECTIONS
