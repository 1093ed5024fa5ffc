"""Small hand-built EPILOG traces whose content the tests know exactly.

Every time, id and byte count below is chosen by hand; the comments give the
values the reader must produce.
"""

from __future__ import annotations

import os

from elgwrite import NO_ID, ElgWriter, Strings

# region type codes (EPILOG 1.9)
FUNCTION, COLL_BARRIER, COLL_ALL2ALL = 1, 4, 7
OMP_PARALLEL, OMP_CRITICAL, OMP_IBARRIER, OMP_CRITICAL_SBLOCK = 11, 18, 21, 23
ATTR_REQUEST = 2


def merged_mpi(path, big_endian=False, compress=False, version=(1, 9)):
    """Merged 2-rank MPI trace.  Locations 5 (rank 0) and 9 (rank 1): partner ids are location ids.

    rank 0: main [1.0, 5.0]; MPI_Send [2.0, 2.5] sends 64 bytes, tag 7, to location 9;
            MPI_Barrier [3.0, 4.0]
    rank 1: main [1.0, 5.0]; MPI_Recv [1.5, 2.5] receives at 2.25 from location 5;
            MPI_Barrier [3.5, 4.0]
    """
    w = ElgWriter(big_endian=big_endian, version=version, lids=True)
    S = Strings(w)
    w.machine(0, 1, S("cluster"))
    w.node(0, 0, 2, S("node0"))
    w.process(0, S("rank 0"))
    w.process(1, S("rank 1"))
    w.location(5, 0, 0, 0, 0)
    w.location(9, 0, 0, 1, 0)
    w.file(0, S("MPI"))
    w.file(1, S("ring.c"))
    w.region(0, S("main"), 1, 10, 50, S("USR"), FUNCTION)
    w.region(1, S("MPI_Send"), 0, NO_ID, NO_ID, S("MPI"), FUNCTION)
    w.region(2, S("MPI_Recv"), 0, NO_ID, NO_ID, S("MPI"), FUNCTION)
    w.region(3, S("MPI_Barrier"), 0, NO_ID, NO_ID, S("MPI"), COLL_BARRIER)
    w.mpi_comm_bits(0, [0, 1])
    w.num_events(14)
    w.last_def()
    w.enter(5, 1.0, 0)
    w.enter(9, 1.0, 0)
    w.enter(9, 1.5, 2)
    w.enter(5, 2.0, 1)
    w.send(5, 2.0, 9, 0, 7, 64)
    w.recv(9, 2.25, 5, 0, 7)
    w.exit(5, 2.5)
    w.exit(9, 2.5)
    w.enter(5, 3.0, 3)
    w.enter(9, 3.5, 3)
    w.mpi_collexit(5, 4.0, NO_ID, 0, 0, 0)
    w.mpi_collexit(9, 4.0, NO_ID, 0, 0, 0)
    w.exit(5, 5.0)
    w.exit(9, 5.0)
    return w.save(path, compress=compress)


# global region ids of the hybrid archive
MAIN, PAR, IBAR, CRIT, SBLOCK, SEND, RECV, ALLRED = range(8)
CRIT_NAME = "!$omp critical @jacobi.c:7"
# rank 1's local region ids: local i is global RANK1_REGIONS[i]
RANK1_REGIONS = [SEND, RECV, MAIN, PAR, IBAR, CRIT, SBLOCK, ALLRED]
R1 = {g: i for i, g in enumerate(RANK1_REGIONS)}


def epik_hybrid(dirpath, compress=True, rank1_big_endian=True):
    """EPIK archive, 2 ranks x 2 threads, EPILOG 1.9 per-rank traces with local ids.

    Global locations: 0 = (rank 0, thread 0), 1 = (0, 1), 2 = (1, 0), 3 = (1, 1).
    Communicators: 0 = WORLD, 1 = ranks (1, 0) (reversed order).
    Clock: rank 1's offsets (0.0, 0.0) and (2.0, 1.0): global = 1.5 x local.
    All global times are listed next to the records; the earliest (rank 0's
    ENTER main at 1.0) becomes time 0.
    """
    os.makedirs(os.path.join(dirpath, "ELG"), exist_ok=True)
    # ---- epik.esd: unified definitions
    w = ElgWriter(lids=False)
    S = Strings(w)
    w.map_offset(0, 0)
    w.map_offset(1, 0)
    w.machine(0, 1, S("cluster"))
    w.node(0, 0, 4, S("node0"))
    w.node(1, 0, 4, S("node1"))
    w.process(0, S("rank 0"))
    w.process(1, S("rank 1"))
    for lid, (nid, pid, tid) in enumerate([(0, 0, 0), (0, 0, 1), (1, 1, 0), (1, 1, 1)]):
        w.thread(tid, pid, S(f"thread {tid}"))
        w.location(lid, 0, nid, pid, tid)
    w.file(0, S("MPI"))
    w.file(1, S("jacobi.c"))
    w.region(MAIN, S("main"), 1, 1, 99, S("USR"), FUNCTION)
    w.region(PAR, S("!$omp parallel @jacobi.c:5"), 1, 5, 12, S("OMP"), OMP_PARALLEL)
    w.region(IBAR, S("!$omp ibarrier @jacobi.c:12"), 1, 12, 12, S("OMP"), OMP_IBARRIER)
    w.region(CRIT, S(CRIT_NAME), 1, 7, 9, S("OMP"), OMP_CRITICAL)
    w.region(SBLOCK, S("!$omp critical sblock @jacobi.c:7"), 1, 7, 9, S("OMP"), OMP_CRITICAL_SBLOCK)
    w.region(SEND, S("MPI_Send"), 0, NO_ID, NO_ID, S("MPI"), FUNCTION)
    w.region(RECV, S("MPI_Recv"), 0, NO_ID, NO_ID, S("MPI"), FUNCTION)
    w.region(ALLRED, S("MPI_Allreduce"), 0, NO_ID, NO_ID, S("MPI"), COLL_ALL2ALL)
    w.mpi_group(0, [], mode=1)  # WORLD: identity, ranks left out
    w.mpi_group(1, [1, 0])
    w.mpi_comm_ref(0, 0)
    w.mpi_comm_ref(1, 1)
    w.save(os.path.join(dirpath, "epik.esd"))

    # ---- epik.map: per-rank id maps and clock offsets
    m = ElgWriter(lids=False)
    m.map_section(0)
    m.idmap(7, [0, 1])
    m.idmap(9, list(range(8)))
    m.idmap(11, [0, 1])
    m.offset(0.0, 0.0)
    m.offset(2.0, 0.0)
    m.map_section(1)
    m.idmap(7, {0: 2, 1: 3}, sparse=True)
    m.idmap(9, RANK1_REGIONS)
    m.idmap(11, [1, 0])  # local comm 0 is the reversed one
    m.offset(0.0, 0.0)
    m.offset(2.0, 1.0)
    m.save(os.path.join(dirpath, "epik.map"))

    # ---- ELG/00000: rank 0, thread-merged (local location ids 0 and 1)
    r0 = ElgWriter(lids=True)
    r0.enter(0, 1.0, MAIN)
    r0.omp_fork(0, 2.0)
    r0.enter(0, 2.0, PAR)
    r0.enter(1, 2.1, PAR)
    r0.enter(0, 2.2, CRIT)
    r0.omp_alock(0, 2.2, 0)  # order 1
    r0.enter(0, 2.2, SBLOCK)
    r0.enter(1, 2.3, CRIT)
    r0.exit(0, 2.4)
    r0.omp_rlock(0, 2.4, 0)
    r0.exit(0, 2.4)
    r0.omp_alock(1, 2.4, 0)  # order 2
    r0.enter(1, 2.4, SBLOCK)
    r0.enter(0, 2.5, IBAR)
    r0.exit(1, 2.6)
    r0.omp_rlock(1, 2.6, 0)
    r0.exit(1, 2.6)
    r0.enter(1, 2.7, IBAR)
    r0.omp_collexit(0, 2.8)
    r0.omp_collexit(1, 2.8)
    r0.omp_collexit(0, 2.9)
    r0.omp_collexit(1, 2.9)
    r0.omp_join(0, 3.0)
    r0.enter(0, 3.0, SEND)
    r0.send(0, 3.0, 0, 1, 3, 100)  # comm (1, 0): local rank 0 is rank 1
    r0.exit(0, 3.1)
    r0.enter(0, 3.2, ALLRED)
    r0.mpi_collexit(0, 4.0, NO_ID, 0, 8, 8)
    r0.exit(0, 5.0)
    r0.save(os.path.join(dirpath, "ELG", "00000"), compress=compress)

    # ---- ELG/00001: rank 1, local ids, its own byte order; global = 1.5 x local
    r1 = ElgWriter(big_endian=rank1_big_endian, lids=True)
    r1.enter(0, 1.0, R1[MAIN])  # 1.5
    r1.omp_fork(0, 2.0)  # 3.0
    r1.enter(0, 2.0, R1[PAR])  # 3.0
    r1.enter(1, 2.2, R1[PAR])  # 3.3
    r1.enter(0, 2.4, R1[IBAR])  # 3.6
    r1.enter(1, 2.6, R1[IBAR])  # 3.9
    r1.omp_collexit(0, 2.8)  # 4.2
    r1.omp_collexit(1, 2.8)
    r1.omp_collexit(0, 3.0)  # 4.5
    r1.omp_collexit(1, 3.0)
    r1.omp_join(0, 3.0)  # 4.5
    r1.enter(0, 3.2, R1[RECV])  # 4.8
    r1.recv(0, 3.4, 1, 0, 3)  # 5.1; comm local 0 = global 1 = ranks (1, 0): local rank 1 is rank 0
    r1.exit(0, 3.4)
    r1.enter(0, 3.6, R1[ALLRED])  # 5.4
    r1.mpi_collexit(0, 3.8, NO_ID, 1, 8, 8)  # 5.7; local comm 1 = world
    r1.exit(0, 4.0)  # 6.0
    r1.save(os.path.join(dirpath, "ELG", "00001"), compress=compress)
    return dirpath
