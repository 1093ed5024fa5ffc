/* mpi_io.c - MPI file I/O with known operations and bytes on every rank.
 *
 * Each rank: MPI_File_open; MPI_File_write_at of 1000 doubles (individual); MPI_File_write_at_all of
 * 1000 doubles (collective); MPI_File_read_at_all of 500 doubles (collective); MPI_File_iread_at of
 * 100 ints completed by MPI_Wait (individual, non-blocking); MPI_File_seek (no transfer);
 * MPI_File_close.  So per rank: individual writes 1 op / 8000 B, individual reads 1 op / 400 B,
 * collective writes 1 op / 8000 B, collective reads 1 op / 4000 B.  The file is io.dat in the
 * working directory (removed at the end).
 */
#include <mpi.h>
#include <stdio.h>

int main(int argc, char **argv)
{
    int rank;
    double buf[1000] = {0};
    int ibuf[100];
    MPI_Init(&argc, &argv);
    MPI_Comm_rank(MPI_COMM_WORLD, &rank);
    MPI_File fh;
    if (MPI_File_open(MPI_COMM_WORLD, "io.dat", MPI_MODE_CREATE | MPI_MODE_RDWR | MPI_MODE_DELETE_ON_CLOSE,
                      MPI_INFO_NULL, &fh) != MPI_SUCCESS) {
        fprintf(stderr, "cannot open io.dat\n");
        MPI_Abort(MPI_COMM_WORLD, 2);
    }
    MPI_Offset mine = (MPI_Offset)rank * 16000;
    MPI_File_write_at(fh, mine, buf, 1000, MPI_DOUBLE, MPI_STATUS_IGNORE);
    MPI_File_write_at_all(fh, mine + 8000, buf, 1000, MPI_DOUBLE, MPI_STATUS_IGNORE);
    MPI_File_read_at_all(fh, mine, buf, 500, MPI_DOUBLE, MPI_STATUS_IGNORE);
    MPI_Request req;
    MPI_File_iread_at(fh, mine, ibuf, 100, MPI_INT, &req);
    MPI_Wait(&req, MPI_STATUS_IGNORE);
    MPI_File_seek(fh, 0, MPI_SEEK_SET);
    MPI_File_close(&fh);
    MPI_Finalize();
    return 0;
}
