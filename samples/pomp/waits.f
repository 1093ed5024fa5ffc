c waits.f - wait states by design (the fixed-form twin of waits.f90), in sleep units of 10 ms
c on 3 threads.  Per repetition, counted by hand from the sleeps (checked by
c tests/instrument/test_fortran_fixed.py):
c   explicit barriers: staggered arrival 2+1+0, after the critical 2+1+0   = 6 units
c   implicit barriers: labelled loop end 0+1+2, parallel end 0+1+2         = 6 units
c                      (single and sections do no sleeping: about 0)
c   critical contention: 3 threads arrive together, each holds it 1 unit = 0+1+2 = 3 units
C A comment in upper case, and one whose text runs past column 72 .......... !$omp barrier
      program waits
      implicit none
      integer omp_get_thread_num
      integer reps, rep, me, i, incrit, nsing, nsect
      parameter (reps = 2)
      incrit = 0
      nsing = 0
      nsect = 0                                                         WAITS016
      do 100 rep = 1, reps
c$omp parallel num_threads(3) private(me, i)
c$omp&        shared(incrit, nsing, nsect)
      me = omp_get_thread_num()
      call sunits(me)
*$omp barrier
!$omp do schedule(static, 1)
      do 10 i = 0, 2
         call sunits(2 - i)
   10 continue
!$omp critical
      call sunits(1)
      incrit = incrit + 1
!$omp end critical
!$omp barrier
!$omp single
      nsing = nsing + 1
!$omp end single
!$omp sections
!$omp section
      nsect = nsect + 1
!$omp section
      nsect = nsect + 10
!$omp end sections
      call sunits(2 - me)
c$omp end parallel
  100 continue
      print '(i0,1x,i0,1x,i0)', incrit,
     +      nsing, nsect
      end

      subroutine sunits(n)
      use iso_c_binding, only: c_int
      integer n
      interface
         integer(c_int) function usleep(us) bind(c, name="usleep")
         import :: c_int
         integer(c_int), value :: us
         end function usleep
      end interface
      integer(c_int) rc
      if (n .gt. 0) rc = usleep(int(10000 * n, c_int))
      end
