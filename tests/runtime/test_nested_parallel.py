"""Nested OpenMP parallel regions (OMP_MAX_ACTIVE_LEVELS=2) traced through OMPT.

A thread that leaves an inner team is back in its outer team: the outer region's closing barrier must carry the
outer team's id, and the thread its outer thread number (regression: the inner team stuck, so expert-trace check
reported "OMP_COLLEXIT for team 2, but the location is not in that team").
"""
import pytest

import tracefmt
from runtime_harness import EXPERT_RUN, assert_valid, events, run
from tracefmt.layout import EventType

pytestmark = pytest.mark.runtime

# The inner teams wait for each other (all four threads at once), else libomp may hand the first inner team's
# worker, already back in its pool, to the second one, and the run has three threads instead of four.
NESTED = r"""
#include <omp.h>
static int arrived;
int main(void)
{
    for (int rep = 0; rep < 2; rep++) {
        #pragma omp parallel num_threads(2)
        {
            #pragma omp parallel num_threads(2)
            {
                int now;
                double give_up = omp_get_wtime() + 10.0;
                #pragma omp atomic
                arrived++;
                do {
                    #pragma omp atomic read
                    now = arrived;
                } while (now < 4 * (rep + 1) && omp_get_wtime() < give_up);
            }
        }
    }
    return 0;
}
"""


@pytest.mark.parametrize("cc", ["gcc", "clang"])
def test_outer_barrier_carries_outer_team(runtime_built, tmp_path, cc):
    (tmp_path / "nested.c").write_text(NESTED)
    run([cc, "-fopenmp", "-O0", "nested.c", "-o", "nested"], cwd=tmp_path)
    run([str(EXPERT_RUN), "-o", "n.elg", "./nested"], cwd=tmp_path,
        env={"OMP_MAX_ACTIVE_LEVELS": "2", "OMP_NUM_THREADS": "2"})
    trace = tracefmt.open(str(tmp_path / "n.elg"))
    assert_valid(trace)
    # per repetition: one outer team + one inner team per outer thread = 3 teams of 2 => 4 locations in all
    assert len(trace.location_ids) == 4
    outer_barriers_after_inner = 0
    for loc in range(4):  # which pool thread becomes which location varies from run to run
        stack = []  # teams this location is in, innermost last
        was_nested = False
        for e in events(trace, loc):
            if e[0] == EventType.ENTER and e[1] == "!$omp parallel":  # c: team id
                stack.append(e[4])
                was_nested = was_nested or len(stack) == 2
            elif e[0] == EventType.OMP_COLLEXIT:
                assert stack and e[3] == stack[-1], f"location {loc}: barrier of team {e[3]} inside {stack}"
                if len(stack) == 1 and was_nested:
                    outer_barriers_after_inner += 1
                    was_nested = False
            elif e[0] == EventType.EXIT and e[1] == "!$omp parallel":
                stack.pop()
    # each repetition: both outer threads run an inner team, then the outer closing barrier
    assert outer_barriers_after_inner == 4
