c tasks.f - OpenMP tasks in fixed form (the twin of tasks.f90 without the tree), 3 threads, units
c of 20 ms of sleep; tests/instrument/test_fortran_tasks.py knows the cases:
c   long_child  one thread creates a short (1 unit) and a long (6 units) child and waits in taskwait
c   group       a taskgroup around tasks of 1 and 2 units, the second (untied) creating one of 3 units
c   producer    a serial producer: 6 tasks of 1 unit, created 1 unit apart (single nowait)
c Prints the number of task bodies that ran: 2 + 3 + 6 = 11.
      program tasks
      implicit none
      integer ran, i
      ran = 0
c$pomp inst begin(long_child)
c$omp parallel num_threads(3) shared(ran)
c$omp single
c$omp task shared(ran)
      call work(1, ran)
c$omp end task
!$omp task
!$omp+ shared(ran)
      call work(6, ran)
!$omp end task
*$omp taskwait
c$omp end single
c$omp end parallel
c$pomp inst end(long_child)
c$pomp inst begin(group)
c$omp parallel num_threads(3) shared(ran)
c$omp single
c$omp taskgroup
c$omp task shared(ran)
      call work(1, ran)
c$omp end task
c$omp task untied shared(ran)
c$omp task shared(ran)
      call work(3, ran)
c$omp end task
      call work(2, ran)
c$omp end task
c$omp end taskgroup
c$omp end single
c$omp end parallel
c$pomp inst end(group)
c$pomp inst begin(producer)
c$omp parallel num_threads(3) shared(ran) private(i)
c$omp single
      do 10 i = 1, 6
      call sunits(1)
c$omp task shared(ran)
      call work(1, ran)
c$omp end task
   10 continue
c$omp end single nowait
c$omp end parallel
c$pomp inst end(producer)
      print '(i0)', ran
      end

      subroutine work(units, ran)
      integer units, ran
      call sunits(units)
c$omp atomic
      ran = ran + 1
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
      if (n .gt. 0) rc = usleep(int(20000 * n, c_int))
      end
