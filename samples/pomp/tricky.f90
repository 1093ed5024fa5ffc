! tricky.f90 - free-form Fortran that expert-instrument must get right: directives in any case and
! continued with '&', comments and character literals that mention !$omp, nested constructs, combined
! constructs with and without their end directive, and a user region.  Prints what it computes.
program tricky
  use omp_lib
  implicit none
  integer :: i, total, count, hits, nsec
  integer :: a(8)
  real :: w(4)
  character(len=60) :: msg
  total = 0; count = 0; hits = 0; nsec = 0
  msg = "!$omp parallel in a string ! and a bang"
  !$pomp inst init
  !$OMP PARALLEL DEFAULT(SHARED) PRIVATE(i) &
  !$omp& NUM_THREADS(3)
  !$omp do reduction(+:total) &
  !$omp   schedule(static)
  do i = 1, 30        ! a comment with !$omp do in it
     total = total + i
  end do
  !$omp end do
  !$omp critical (tally)
  count = count + 1
  !$omp end critical (tally)
  !$omp atomic
  hits = hits + 2
  !$omp single
  msg = 'it''s a single ' // &
       '!$omp end single'
  !$omp end single
  !$omp master
  nsec = nsec + 100
  !$omp end master
  !$omp barrier
  !$omp flush
  !$omp end parallel
  !$omp parallel do default(none) shared(a) lastprivate(i) num_threads(3)
  do i = 1, 8
     a(i) = i * i
  end do
  !$omp parallel sections num_threads(2)
  nsec = nsec + 1
  !$omp section
  !$omp atomic
  nsec = nsec + 10
  !$omp end parallel sections
  w = 1.0
  !$omp parallel num_threads(2)
  !$omp workshare
  w = w * 2.0
  !$omp end workshare
  !$omp end parallel
  !$pomp inst begin(Summation)
  total = total + sum(a)
  !$pomp inst end(Summation)
  print '(a)', trim(msg)
  print '(5i6,f8.2)', total, count, hits, nsec, i, sum(w)
  !$pomp inst finalize
end program tricky
