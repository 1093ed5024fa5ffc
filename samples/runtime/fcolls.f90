! fcolls.f90 - a Fortran MPI program with known counts (checked by tests/runtime):
! blocking collectives (Fortran MPI_IN_PLACE at the Reduce root), Isend/Irecv + Waitall,
! persistent requests started twice, a non-blocking Ibcast, a split communicator.
program fcolls
  use mpi
  implicit none
  integer :: ierr, rank, nprocs, right, left, i, half
  integer :: a(4), b(4), reqs(2), preqs(2), ibreq
  integer :: statuses(MPI_STATUS_SIZE, 2)
  double precision :: x, y
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  call MPI_Comm_size(MPI_COMM_WORLD, nprocs, ierr)
  right = mod(rank + 1, nprocs)
  left = mod(rank + nprocs - 1, nprocs)
  a = rank
  call MPI_Bcast(a, 4, MPI_INTEGER, 1, MPI_COMM_WORLD, ierr)
  x = rank
  call MPI_Allreduce(MPI_IN_PLACE, x, 1, MPI_DOUBLE_PRECISION, MPI_SUM, MPI_COMM_WORLD, ierr)
  if (rank == 0) then
    call MPI_Reduce(MPI_IN_PLACE, x, 1, MPI_DOUBLE_PRECISION, MPI_SUM, 0, MPI_COMM_WORLD, ierr)
  else
    call MPI_Reduce(x, y, 1, MPI_DOUBLE_PRECISION, MPI_SUM, 0, MPI_COMM_WORLD, ierr)
  end if
  call MPI_Irecv(b, 4, MPI_INTEGER, left, 7, MPI_COMM_WORLD, reqs(1), ierr)
  call MPI_Isend(a, 4, MPI_INTEGER, right, 7, MPI_COMM_WORLD, reqs(2), ierr)
  call MPI_Waitall(2, reqs, statuses, ierr)
  call MPI_Recv_init(b, 2, MPI_INTEGER, left, 8, MPI_COMM_WORLD, preqs(1), ierr)
  call MPI_Send_init(a, 2, MPI_INTEGER, right, 8, MPI_COMM_WORLD, preqs(2), ierr)
  do i = 1, 2
    call MPI_Startall(2, preqs, ierr)
    call MPI_Waitall(2, preqs, MPI_STATUSES_IGNORE, ierr)
  end do
  call MPI_Request_free(preqs(1), ierr)
  call MPI_Request_free(preqs(2), ierr)
  call MPI_Ibcast(a, 4, MPI_INTEGER, 0, MPI_COMM_WORLD, ibreq, ierr)
  call MPI_Wait(ibreq, MPI_STATUS_IGNORE, ierr)
  call MPI_Comm_split(MPI_COMM_WORLD, mod(rank, 2), rank, half, ierr)
  call MPI_Barrier(half, ierr)
  call MPI_Comm_free(half, ierr)
  if (rank == 0) print *, x
  call MPI_Finalize(ierr)
end program fcolls
