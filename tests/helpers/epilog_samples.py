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


# ---------------------------------------------------------------------------- Blue Gene/Q-like archive
BGQ_MAIN, BGQ_PAR, BGQ_IBAR, BGQ_SEND, BGQ_RECV, BGQ_BARRIER = range(6)
BGQ_METRICS = ("PAPI_TOT_CYC", "PAPI_FP_OPS")


def bgq_arrival(tid: int) -> float:
    """Time thread tid of every rank enters the implicit barrier of the parallel region."""
    return 1.5 + 0.005 * (tid % 8)


def bgq_expected(ranks: int, threads: int, iterations: int = 1) -> dict[str, float]:
    """Wait states of ``epik_bgq``, by hand from the times below (seconds, summed over locations):

    * implicit barrier: thread tid waits from its arrival until the last one, 1.5 + 0.005 x 7 (tid % 8
      takes every value for threads >= 8), i.e. 0.005 x (7 - tid % 8);
    * Late Sender: odd rank r posts MPI_Recv at 3.0, its partner r - 1 enters MPI_Send at 3.2: 0.2 s;
    * barrier: rank r enters MPI_Barrier at 4.0 + 0.01 r; everyone waits for rank ranks - 1.
    """
    last = max(bgq_arrival(t) for t in range(threads))
    ibar = ranks * sum(last - bgq_arrival(t) for t in range(threads))
    return {
        "omp_ibarrier_wait": iterations * ibar,
        "mpi_latesender": iterations * 0.2 * (ranks // 2),
        "mpi_barrier_wait": iterations * sum(0.01 * (ranks - 1 - r) for r in range(ranks)),
    }


def _world_group(w: ElgWriter, gid: int, size: int) -> None:
    """MPI_GROUP with mode WORLD as EPIK 1.4 writes it: the size, no rank list."""
    w.rec(27, "IBI", gid, 1, size)


def epik_bgq(dirpath, ranks: int = 32, threads: int = 64, big_endian: bool = True, compress: bool = True,
             iterations: int = 1):
    """An EPIK archive shaped like a Scalasca 1.4 Blue Gene/Q run: ``ranks`` x ``threads`` locations,
    big-endian, gzip'ed thread-merged per-rank traces with local ids, a WORLD group without rank list,
    two metrics whose values every ENTER/EXIT carries, CALL_PATH definitions, a 2-D Cartesian topology,
    MAP_OFFSETs to each rank's section of epik.map, per-rank event statistics and no clock offsets (the
    machine has a global clock).

    Each iteration (period 10 s) of every rank: a parallel region of all threads with an implicit
    barrier (arrival ``bgq_arrival(tid)``, release at 2.0), a message from each even rank to the next
    odd one (Late Sender 0.2 s) and an MPI_Barrier (rank r enters at 4.0 + 0.01 r, all leave at 4.5);
    ``bgq_expected`` gives the wait states.  Rank 1 numbers its regions in reverse (its id map says so).
    """
    import struct

    os.makedirs(os.path.join(dirpath, "ELG"), exist_ok=True)
    n_regions = 6
    local_region = [list(range(n_regions)) if r != 1 else list(reversed(range(n_regions))) for r in range(ranks)]
    # ---- epik.map
    m = ElgWriter(big_endian=big_endian, lids=False)
    map_at = []
    for r in range(ranks):
        map_at.append(len(m.buf))  # where the rank's section starts: epik.esd's MAP_OFFSET says so
        m.map_section(r)
        m.idmap(7, [r * threads + t for t in range(threads)])
        m.idmap(9, local_region[r])
        m.idmap(11, [0])
        m.rec(21, "I3B", 3, 101, 102, 110)
        m.rec(22, "I3I", 3, 0, 0, 0)
    m.save(os.path.join(dirpath, "epik.map"))

    # ---- epik.esd
    w = ElgWriter(big_endian=big_endian, lids=False)
    S = Strings(w)
    for r in range(ranks):
        w.map_offset(r, map_at[r])  # PEARL seeks to a rank's section by it
    w.machine(0, ranks // 2 or 1, S("Blue Gene/Q"))
    for n in range(max(1, ranks // 2)):
        w.node(n, 0, 64, S(f"R00-M0-N{n:02d}-J00"), clock_rate=1.6e9)
    for r in range(ranks):
        w.process(r, S(f"rank {r}"))
    for r in range(ranks):
        for t in range(threads):
            w.thread(t, r, S(f"thread {t}"))
            w.location(r * threads + t, 0, r // 2, r, t)
    w.file(0, S("MPI"))
    w.file(1, S("bgq.c"))
    w.file(2, S("EPIK"))
    w.region(BGQ_MAIN, S("main"), 1, 10, 90, S("USR"), FUNCTION)
    w.region(BGQ_PAR, S("!$omp parallel @bgq.c:20"), 1, 20, 40, S("OMP"), OMP_PARALLEL)
    w.region(BGQ_IBAR, S("!$omp ibarrier @bgq.c:40"), 1, 40, 40, S("OMP"), OMP_IBARRIER)
    w.region(BGQ_SEND, S("MPI_Send"), 0, NO_ID, NO_ID, S("MPI"), FUNCTION)
    w.region(BGQ_RECV, S("MPI_Recv"), 0, NO_ID, NO_ID, S("MPI"), FUNCTION)
    w.region(BGQ_BARRIER, S("MPI_Barrier"), 0, NO_ID, NO_ID, S("MPI"), COLL_BARRIER)
    for i, name in enumerate(BGQ_METRICS):
        w.metric(i, S(name), S("PAPI counter"))
    for cpid, (rid, parent) in enumerate([(BGQ_MAIN, NO_ID), (BGQ_PAR, 0), (BGQ_IBAR, 1), (BGQ_SEND, 0),
                                          (BGQ_RECV, 0), (BGQ_BARRIER, 0)]):
        order = struct.unpack("<Q", struct.pack("<d", float(cpid)))[0]  # bits of the first visit time
        w.rec(20, "IIIQ", cpid, rid, parent, order)
    _world_group(w, 0, ranks)
    w.mpi_comm_ref(0, 0)
    rows, cols = 4, max(1, ranks // 4)
    w.rec(16, "IIB2I2BI2I", 0, 0, 2, rows, cols, 1, 0, S("torus"), S("x"), S("y"))
    for r in range(ranks):
        w.rec(17, "IIB2I", 0, r * threads, 2, r % rows, r // rows)
    w.save(os.path.join(dirpath, "epik.esd"))

    # ---- ELG/NNNNN: thread-merged, local location ids 0..threads-1, metric values on ENTER/EXIT
    for r in range(ranks):
        ev = ElgWriter(big_endian=big_endian, lids=True)
        reg = {g: local_region[r].index(g) for g in range(n_regions)}

        def metv(t):
            return (int(t * 1.6e9), int(t * 1e6))

        for it in range(iterations):
            base = 10.0 * it
            if it == 0:
                ev.enter(0, 0.0, reg[BGQ_MAIN], metv=metv(0.0))
            ev.omp_fork(0, base + 1.0)
            for t in range(threads):
                ev.enter(t, base + 1.0, reg[BGQ_PAR], metv=metv(base + 1.0))
            for t in sorted(range(threads), key=bgq_arrival):
                ev.enter(t, base + bgq_arrival(t), reg[BGQ_IBAR], metv=metv(base + bgq_arrival(t)))
            for t in range(threads):
                ev.omp_collexit(t, base + 2.0, metv=metv(base + 2.0))
            for t in range(threads):
                ev.omp_collexit(t, base + 2.1, metv=metv(base + 2.1))
            ev.omp_join(0, base + 2.1)
            if r % 2 == 0 and r + 1 < ranks:
                ev.enter(0, base + 3.2, reg[BGQ_SEND], metv=metv(base + 3.2))
                ev.send(0, base + 3.2, r + 1, 0, 9, 1024)
                ev.exit(0, base + 3.3, metv=metv(base + 3.3))
            elif r % 2 == 1:
                ev.enter(0, base + 3.0, reg[BGQ_RECV], metv=metv(base + 3.0))
                ev.recv(0, base + 3.3, r - 1, 0, 9)
                ev.exit(0, base + 3.3, metv=metv(base + 3.3))
            ev.enter(0, base + 4.0 + 0.01 * r, reg[BGQ_BARRIER], metv=metv(base + 4.0 + 0.01 * r))
            ev.mpi_collexit(0, base + 4.5, NO_ID, 0, 0, 0, metv=metv(base + 4.5))
        ev.exit(0, 10.0 * iterations, metv=metv(10.0 * iterations))
        ev.save(os.path.join(dirpath, "ELG", f"{r:05d}"), compress=compress)
    return dirpath
