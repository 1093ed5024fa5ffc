! tasks.f90 - OpenMP tasks in Fortran with designed behaviour (the Fortran twin of a part of
! samples/runtime/omp_tasks.c), each case a parallel region of 3 threads inside a user region named after
! the case (tests/instrument/test_fortran_tasks.py knows them).  A unit is 20 ms of sleep.
!   tree        a binary task tree: node(d) creates node(d-1) and node(d-2) as tasks (recursive); node(3)
!               has 9 nodes (8 tasks), its 5 leaves work 1 unit each; the single's barrier waits for them
!   long_child  one thread creates a short (1 unit) and a long (6 units) child and waits in a taskwait
!   group       a taskgroup around tasks of 1 and 2 units, the second (untied) creating a third of 3 units
!   producer    a serial producer: one thread creates 6 tasks of 1 unit, 1 unit apart (single nowait)
! Prints the number of task bodies that ran: 9 + 2 + 3 + 6 = 20 (19 tasks created, the tree's root is no task).
program tasks
  implicit none
  integer :: ran
  ran = 0
  call tree(ran)
  call long_child(ran)
  call group(ran)
  call producer(ran)
  print '(i0)', ran
contains
  subroutine work(units, ran)
    integer, intent(in) :: units
    integer, intent(inout) :: ran
    call sleep_units(units)
    !$omp atomic
    ran = ran + 1
  end subroutine work

  recursive subroutine node(depth, ran)
    integer, intent(in) :: depth
    integer, intent(inout) :: ran
    if (depth <= 0) then
       call work(1, ran)
       return
    end if
    !$omp atomic
    ran = ran + 1
    !$omp task shared(ran)
    call node(depth - 1, ran)
    !$omp end task
    !$omp task shared(ran)
    call node(depth - 2, ran)
    !$omp end task
  end subroutine node

  subroutine tree(ran)
    integer, intent(inout) :: ran
    !$pomp inst begin(tree)
    !$omp parallel num_threads(3) shared(ran)
    !$omp single
    call node(3, ran)
    !$omp end single
    !$omp end parallel
    !$pomp inst end(tree)
  end subroutine tree

  subroutine long_child(ran)
    integer, intent(inout) :: ran
    !$pomp inst begin(long_child)
    !$omp parallel num_threads(3) shared(ran)
    !$omp single
    !$omp task shared(ran)
    call work(1, ran)
    !$omp end task
    !$omp task shared(ran)
    call work(6, ran)
    !$omp end task
    !$omp taskwait
    !$omp end single
    !$omp end parallel
    !$pomp inst end(long_child)
  end subroutine long_child

  subroutine group(ran)
    integer, intent(inout) :: ran
    !$pomp inst begin(group)
    !$omp parallel num_threads(3) shared(ran)
    !$omp single
    !$omp taskgroup
    !$omp task shared(ran)
    call work(1, ran)
    !$omp end task
    !$omp task untied shared(ran)
    !$omp task shared(ran)
    call work(3, ran)
    !$omp end task
    call work(2, ran)
    !$omp end task
    !$omp end taskgroup
    !$omp end single
    !$omp end parallel
    !$pomp inst end(group)
  end subroutine group

  subroutine producer(ran)
    integer, intent(inout) :: ran
    integer :: i
    !$pomp inst begin(producer)
    !$omp parallel num_threads(3) shared(ran) private(i)
    !$omp single
    do i = 1, 6
       call sleep_units(1) ! producing the next piece of work takes as long as doing it
       !$omp task shared(ran)
       call work(1, ran)
       !$omp end task
    end do
    !$omp end single nowait
    !$omp end parallel
    !$pomp inst end(producer)
  end subroutine producer

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
    if (n > 0) rc = usleep(int(20000 * n, c_int))
  end subroutine sleep_units
end program tasks
