"""expert-profile --charts: the radar chart's legend leaves its title free, and a Fortran program's MAIN__ is the
program's main (one series with the C main that calls it)."""

from __future__ import annotations

import matplotlib

import tracefmt
from analyzer.profile.ompp import profile_trace, radar_figure, radar_regions, write_charts

matplotlib.use("Agg")


def fortran_trace():
    """Two ranks of a Fortran program: main [0, 10] > MAIN__ [0.1, 9.9] > solve (4 s on rank 0, 2 s on rank 1)
    and exchange (1 s each)."""
    b = tracefmt.TraceBuilder()
    for rank, solve in ((0, 4.0), (1, 2.0)):
        loc = b.location(rank=rank)
        b.enter(loc, 0.0, "main"); b.enter(loc, 0.1, "MAIN__")
        b.enter(loc, 1.0, "solve_"); b.exit(loc, 1.0 + solve, "solve_")
        b.enter(loc, 7.0, "exchange_"); b.exit(loc, 8.0, "exchange_")
        b.exit(loc, 9.9, "MAIN__"); b.exit(loc, 10.0, "main")
    return b.build()


def test_main_and_MAIN___are_one_series():
    p = profile_trace(fortran_trace())
    got = [(label, r.name) for label, r in radar_regions(p, 3)]
    assert got == [("main", "main"), ("solve_", "solve_"), ("exchange_", "exchange_")]


def test_only_MAIN___is_labelled_main():
    b = tracefmt.TraceBuilder()
    loc = b.location(rank=0)
    b.enter(loc, 0.0, "MAIN__"); b.enter(loc, 1.0, "solve_"); b.exit(loc, 2.0, "solve_"); b.exit(loc, 3.0, "MAIN__")
    assert [(label, r.name) for label, r in radar_regions(profile_trace(b.build()), 3)] == [
        ("main", "MAIN__"), ("solve_", "solve_")]


def test_radar_legend_does_not_cover_the_title(tmp_path):
    import matplotlib.pyplot as plt

    p = profile_trace(fortran_trace())
    fig = radar_figure(p, 3)
    fig.canvas.draw()
    ax = fig.axes[0]
    legend = ax.get_legend()
    title, leg, axes = ax.title.get_window_extent(), legend.get_window_extent(), ax.get_window_extent()
    assert not title.overlaps(leg)
    assert leg.y1 <= axes.y0 + 1  # below the polar axes, over none of them
    assert [t.get_text() for t in legend.get_texts()] == ["main (max 10 s)", "solve_ (max 4 s)",
                                                          "exchange_ (max 1 s)"]
    plt.close(fig)
    files = write_charts(p, str(tmp_path / "charts"))
    assert [f.rsplit("/", 1)[1] for f in files] == ["overheads_rank0.png", "overheads_rank1.png", "radar_execT.png"]
