! waits.f90 - wait states by design (the Fortran twin of waits.c), in sleep units of 10 ms on 3 threads.
! Per repetition, counted by hand from the sleeps (tests/instrument/test_fortran.py checks them):
!   explicit barriers: staggered arrival 2+1+0, after the critical section 2+1+0   = 6 units
!   implicit barriers: loop end 0+1+2, parallel end 0+1+2                          = 6 units
!   critical contention: 3 threads arrive together, each holds it 1 unit           = 0+1+2 = 3 units
program waits
  use omp_lib
  implicit none
  integer, parameter :: reps = 2
  integer :: rep, me, i, in_critical
  in_critical = 0
  do rep = 1, reps
     !$omp parallel num_threads(3) private(me, i)
     me = omp_get_thread_num()
     call sleep_units(me)
     !$omp barrier
     !$omp do schedule(static, 1)
     do i = 0, 2
        call sleep_units(2 - i)
     end do
     !$omp critical
     call sleep_units(1)
     in_critical = in_critical + 1
     !$omp end critical
     !$omp barrier
     call sleep_units(2 - me)
     !$omp end parallel
  end do
  print '(i0)', in_critical
contains
  subroutine sleep_units(n)
    use iso_c_binding, only: c_int
    integer, intent(in) :: n
    interface
       integer(c_int) function usleep(us) bind(c, name="usleep")
         import :: c_int
         integer(c_int), value :: us
       end function usleep
    end interface
    integer(c_int) :: rc
    if (n > 0) rc = usleep(int(10000 * n, c_int))
  end subroutine sleep_units
end program waits
