/* mpi_rma_shared.c - the other window kinds: MPI_Win_allocate_shared over the node's communicator
 * (MPI_Comm_split_type SHARED) with two fences, and MPI_Win_create_dynamic over MPI_COMM_WORLD with
 * MPI_Win_attach / MPI_Win_detach of one int.  Each rank: two windows, created and freed in that order.
 */
#include <mpi.h>
int main(int argc, char **argv)
{
    MPI_Init(&argc, &argv);
    MPI_Comm node;
    MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, 0, MPI_INFO_NULL, &node);
    int *base;
    MPI_Win sw, dw;
    MPI_Win_allocate_shared(4 * sizeof(int), sizeof(int), MPI_INFO_NULL, node, &base, &sw);
    MPI_Win_fence(0, sw);
    MPI_Win_fence(0, sw);
    MPI_Win_free(&sw);
    static int cell;
    MPI_Win_create_dynamic(MPI_INFO_NULL, MPI_COMM_WORLD, &dw);
    MPI_Win_attach(dw, &cell, sizeof cell);
    MPI_Win_detach(dw, &cell);
    MPI_Win_free(&dw);
    MPI_Comm_free(&node);
    MPI_Finalize();
    return 0;
}
