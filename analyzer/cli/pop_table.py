"""The POP efficiency table ``expert-analyze`` prints after its report (``patterns.pop``)."""

from __future__ import annotations

from patterns.pop import NAMES, efficiencies

__all__ = ["pop_table"]

ROWS = (
    ("parallel_efficiency", 0, "parallel efficiency", "= load balance x communication efficiency"),
    ("load_balance", 1, "load balance", "average / largest useful computation"),
    ("communication_efficiency", 1, "communication efficiency", "= serialisation x transfer"),
    ("serialisation_efficiency", 2, "serialisation", "largest useful computation / run time on an ideal network"),
    ("transfer_efficiency", 2, "transfer", "run time on an ideal network / run time"),
)


def pop_table(cube, out) -> None:
    """Write the POP efficiencies of ``cube`` (nothing when it has no ``pop_*`` metrics)."""
    if not all(n in cube.metric_names for n in NAMES):
        return
    eff = efficiencies({n: cube.total(n) for n in NAMES})
    if not eff:
        return
    out.write("\nPOP efficiencies (the lost time is in the metrics pop_*; docs/analysis.md, \"POP efficiencies\")\n")
    for key, depth, label, how in ROWS:
        out.write(f"  {'  ' * depth}{label:<{28 - 2 * depth}s} {100.0 * eff[key]:6.1f} %   {how}\n")
