! mpi_rma.f90 - MPI one-sided calls from Fortran (mpif.h / use mpi): Open MPI's Fortran bindings bypass the C
! wrappers, so the runtime has Fortran wrappers of its own.  2 ranks: a window of 4 integers on each; rank 1
! puts its rank into slot 1 of rank 0's window between two fences, then adds it under an exclusive lock.
program mpi_rma_fortran
  use mpi
  implicit none
  integer :: ierr, rank, win, buf(4), one
  integer(kind=MPI_ADDRESS_KIND) :: sz, disp
  call MPI_Init(ierr)
  call MPI_Comm_rank(MPI_COMM_WORLD, rank, ierr)
  buf = 0
  sz = 16
  call MPI_Win_create(buf, sz, 4, MPI_INFO_NULL, MPI_COMM_WORLD, win, ierr)
  call MPI_Win_fence(0, win, ierr)
  one = rank
  disp = rank
  if (rank > 0) call MPI_Put(one, 1, MPI_INTEGER, 0, disp, 1, MPI_INTEGER, win, ierr)
  call MPI_Win_fence(0, win, ierr)
  if (rank > 0) then
    call MPI_Win_lock(MPI_LOCK_EXCLUSIVE, 0, 0, win, ierr)
    call MPI_Accumulate(one, 1, MPI_INTEGER, 0, disp, 1, MPI_INTEGER, MPI_SUM, win, ierr)
    call MPI_Win_unlock(0, win, ierr)
  end if
  call MPI_Win_free(win, ierr)
  call MPI_Finalize(ierr)
end program mpi_rma_fortran
