"""Delay costs: who caused the wait states (Scalasca 2.6's root-cause analysis, Delay.MPI/OMP.pattern).

A wait state is caused by a *delay*: extra time the causing location spent, in its
synchronisation interval (since it last synchronised with the waiting location), in call paths
the waiting location spent less time in.  Its *short-term* cost is the wait it causes directly,
distributed over those call paths in proportion to the delay; its *long-term* cost is the waiting
that wait state causes in turn later on (wait states propagate: a late receive delays the next
send), carried backwards through chains of waits.  Both are charged to the causing location's call
paths, so a metric here is *where* to optimise to remove waiting, not where the waiting is.

The metric tree is Scalasca's: ``delay`` > ``delay_mpi`` > point-to-point (Late Sender, Late
Receiver) and collective (barrier, N x N, 1-to-N, N-to-1) costs; ``delay_omp`` > OpenMP barrier and
idle-thread costs; every kind has a short-term leaf (``delay_latesender``) and a long-term one
(``delay_latesender_longterm``) under an aggregate (``delay_latesender_aggregate``).  Long-term
costs are classified by the kind of the wait state at the *end* of the chain.  The backward
replay is ``patterns.kernels.delay.delay_costs``; docs/analysis.md ("Delay costs") gives the
formulas and where we differ from Scalasca.
"""

from __future__ import annotations

import numpy as np

from .api import Pattern
from .backward import REQUIRES, backward_inputs
from .backward_points import KINDS
from .instances import cached

__all__ = ["delay_profile", "PATTERNS"]

_TITLE = {"latesender": "MPI Late Sender", "latereceiver": "MPI Late Receiver", "barrier": "MPI barrier",
          "n2n": "MPI N x N collective", "12n": "MPI 1-to-N collective", "n21": "MPI N-to-1 collective",
          "ompbarrier": "OpenMP barrier", "ompidle": "OpenMP idle-thread"}
_WAIT = {"latesender": "Late Sender wait states (receives waiting for their message)",
         "latereceiver": "Late Receiver wait states (sends waiting for their receiver)",
         "barrier": "waiting in MPI barriers", "n2n": "waiting in MPI N x N collectives (Allreduce, Allgather, ...)",
         "12n": "waiting in MPI 1-to-N collectives (Bcast, Scatter) for the root",
         "n21": "waiting in MPI N-to-1 collectives (Reduce, Gather) at the root",
         "ompbarrier": "waiting in OpenMP barriers",
         "ompidle": "idle OpenMP worker threads while the master works alone"}
_GROUP = {"latesender": "delay_p2p", "latereceiver": "delay_p2p", "barrier": "delay_collective",
          "n2n": "delay_collective", "12n": "delay_collective", "n21": "delay_collective",
          "ompbarrier": "delay_omp", "ompidle": "delay_omp"}


def delay_profile(ctx) -> dict[str, np.ndarray]:
    """Every leaf delay metric as a dense [C, L] array, by name (computed once per context)."""
    return cached(ctx, "patterns.delay", lambda: _profile(ctx))


def _profile(ctx) -> dict[str, np.ndarray]:
    from .kernels.delay import delay_costs

    inp = backward_inputs(ctx)
    res, forced = delay_costs(inp)
    if forced:
        ctx.problems.append(f"delay analysis: {forced} wait state(s) met out of order (inconsistent trace); "
                            f"their costs are approximate")
    out = {}
    for k, kind in enumerate(KINDS):
        out[f"delay_{kind}"] = res[k]
        out[f"delay_{kind}_longterm"] = res[len(KINDS) + k]
    return out


class _Delay(Pattern):
    unit = "sec"
    requires = REQUIRES
    depends = ()
    leaves: tuple[str, ...] = ()

    def compute(self, ctx):
        p = delay_profile(ctx)
        out = np.zeros((ctx.n_cnodes, ctx.n_locations))
        for name in self.leaves:
            out += p[name]
        return out


def _make(name, parent, display, description, diagnosis, leaves) -> type:
    return type(name.title().replace("_", ""), (_Delay,), {
        "name": name, "parent": parent, "display_name": display, "description": description,
        "diagnosis": diagnosis, "leaves": tuple(leaves), "__module__": __name__,
        # zero without calls of the paradigm: the text report hides them then (Pattern.paradigm)
        "paradigm": {"delay_mpi": "mpi", "delay_omp": "openmp"}.get(name)})


def _patterns() -> list[type]:
    out = []
    every = [f"delay_{k}{s}" for k in KINDS for s in ("", "_longterm")]
    groups = {"delay_p2p": ("delay_mpi", "MPI point-to-point delay costs", ("latesender", "latereceiver")),
              "delay_collective": ("delay_mpi", "MPI collective delay costs", ("barrier", "n2n", "12n", "n21")),
              "delay_omp": ("delay", "OpenMP delay costs", ("ompbarrier", "ompidle"))}
    diag = ("Optimise (shorten or rebalance) these call paths on these locations: the waiting they cause "
            "elsewhere shrinks with them.")
    out.append(_make("delay", None, "Delay costs", "Costs of the delays that cause wait states: the waiting they "
                     "cause directly (short-term) and through propagation (long-term), charged to the call paths and "
                     "locations of the delays.  Sum of its children.", diag, every))
    mpi = [f"delay_{k}{s}" for k in KINDS[:6] for s in ("", "_longterm")]
    out.append(_make("delay_mpi", "delay", "MPI delay costs", "Delay costs of MPI wait states.", diag, mpi))
    for g, (parent, title, kinds) in groups.items():
        leaves = [f"delay_{k}{s}" for k in kinds for s in ("", "_longterm")]
        out.append(_make(g, parent, title, f"{title}: delays that cause " + "; ".join(_WAIT[k] for k in kinds) + ".",
                         diag, leaves))
    for kind in KINDS:
        agg = f"delay_{kind}_aggregate"
        out.append(_make(agg, _GROUP[kind], f"{_TITLE[kind]} delay costs",
                         f"Delays causing {_WAIT[kind]}: short-term plus long-term costs.", diag,
                         [f"delay_{kind}", f"delay_{kind}_longterm"]))
        out.append(_make(f"delay_{kind}", agg, f"Short-term {_TITLE[kind]} delay costs",
                         f"Delays that directly cause {_WAIT[kind]}: each wait is distributed over the call paths "
                         f"in which the causing location spent more time than the waiting one since they last "
                         f"synchronised, in proportion to that excess (scaled so that the costs of one wait state "
                         f"add up to its waiting time, less where the causer waited itself).", diag,
                         [f"delay_{kind}"]))
        out.append(_make(f"delay_{kind}_longterm", agg, f"Long-term {_TITLE[kind]} delay costs",
                         f"Delays that cause {_WAIT[kind]} indirectly: the waiting caused by the wait states "
                         f"that a delay's wait state itself causes later on, propagated backwards through chains of "
                         f"wait states to the delays at their origin.", diag, [f"delay_{kind}_longterm"]))
    return out


PATTERNS = _patterns()
