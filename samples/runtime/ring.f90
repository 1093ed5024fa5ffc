! ring.f90 - a Fortran MPI program: each rank sends 10 integers to the right (tag 5), then an Allreduce.
program ring
  use mpi
  implicit none
  integer :: ierr, rank, size, right, left, total
  integer :: buf(10), inbuf(10), status(MPI_STATUS_SIZE)
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, size, ierr)
  right = mod(rank + 1, size)
  left = mod(rank + size - 1, size)
  buf = rank
  call MPI_Sendrecv(buf, 10, MPI_INTEGER, right, 5, inbuf, 10, MPI_INTEGER, left, 5, MPI_COMM_WORLD, status, ierr)
  call MPI_Allreduce(rank, total, 1, MPI_INTEGER, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (rank == 0) print *, total
  call MPI_Finalize(ierr)
end program ring
