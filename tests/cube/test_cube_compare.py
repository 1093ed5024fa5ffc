"""The one comparator (analyzer.cube.compare): summaries by names, compare() by identity."""

import numpy as np
from cube_helpers import small_cube

from analyzer.cube.compare import compare, summarize, summary_from_json
from analyzer.cube.json_summary import to_json_dict


def test_cube_and_its_json_summary_agree():
    c = small_cube()
    diffs = compare(summarize(c), summary_from_json(to_json_dict(c), "<json>"), rtol=1e-12)
    assert [d.name for d in diffs] == c.metric_names and not any(d.changed for d in diffs)


def test_one_changed_cell_shows_everywhere():
    a = small_cube()
    v = {n: np.array(a.values[n]) for n in a.metric_names}
    v["late_sender"][3, 2] += 0.25
    d = {m.name: m for m in compare(summarize(a, cells=True), summarize(small_cube(values=v), cells=True), cells=True)}
    ls = d["late_sender"]
    assert ls.changed and ls.total_differs and ls.delta == 0.25
    assert [(c.key, c.delta) for c in ls.callpaths] == [("main/MPI_Recv", 0.25)]
    assert [(c.key, c.delta) for c in ls.locations] == [((1, 0), 0.25)]
    assert [(c.key, c.base, c.new) for c in ls.cells] == [(("main/MPI_Recv", (1, 0)), 1.5, 1.75)]
    assert not d["time"].changed
    # a tolerance hides it
    assert not any(m.changed for m in compare(summarize(a), summarize(small_cube(values=v)), atol=0.3))


def test_metric_on_one_side_only():
    a = summary_from_json({"metrics": {"x": {"unit": "sec", "total": 1, "per_location": {}, "per_callpath": {}}}}, "a")
    b = summary_from_json({"metrics": {}}, "b")
    (d,) = compare(a, b)
    assert d.presence == "base only" and d.changed and (d.base, d.new) == (1, 0.0)


def test_locations_compared_as_arrays_as_a_dict_per_metric_would_be():
    import dataclasses

    from analyzer.cube import LocationInfo

    a = small_cube()
    v = {n: np.array(a.values[n]) for n in a.metric_names}
    v["late_sender"][3, 2] += 0.25
    v["time"][0, 0] -= 1.0
    b = small_cube(values=v)
    b.locations = [LocationInfo("cluster", "n2", 2, 0)] + b.locations[:2]  # one location on one side only
    b.values["mpi"] = np.zeros_like(v["mpi"])
    sa, sb = summarize(a), summarize(b)
    del sa.metrics["visits"], sb.metrics["mpi"]  # a metric on one side only, each way

    def as_dicts(s):
        return dataclasses.replace(s, locations=None, metrics={
            n: dataclasses.replace(m, per_location=dict(m.per_location)) for n, m in s.metrics.items()})

    for rtol, atol in ((0.0, 0.0), (0.0, 0.3), (0.5, 0.0)):
        fast = compare(sa, sb, rtol, atol)
        slow = compare(as_dicts(sa), as_dicts(sb), rtol, atol)
        assert [d.name for d in fast] == ["time", "mpi", "late_sender", "visits"]
        assert [[(c.key, c.base, c.new) for c in d.locations] for d in fast] == \
               [[(c.key, c.base, c.new) for c in d.locations] for d in slow]
    assert any(d.locations for d in compare(sa, sb))


def test_summaries_do_not_grow_with_metrics_times_locations(tmp_path):
    """A small cube declaring hundreds of metrics without values over hundreds of locations: a summary holding
    a dict entry per metric and location took 15 MB; it stays within twice a sane file's of the same size."""
    import tracemalloc

    from hostile_cubes import hostile_cubex

    from analyzer.cube import read_cubex

    peaks = {}
    for kind in ("sane", "void_metrics"):
        size = hostile_cubex(tmp_path / f"{kind}.cubex", kind, 256 << 10)
        cube = read_cubex(tmp_path / f"{kind}.cubex")
        tracemalloc.start()
        s = summarize(cube)
        peaks[kind] = tracemalloc.get_traced_memory()[1]
        compare(s, s)  # what it adds is a MetricDiff per metric
        peaks[kind, "compared"] = tracemalloc.get_traced_memory()[1]
        tracemalloc.stop()
    cells = len(cube.metrics) * cube.n_locations
    assert cells > 200_000 and size < 300 << 10
    assert peaks["void_metrics"] < 2 * peaks["sane"]
    assert peaks["void_metrics", "compared"] < 2 * cells  # not even a float per metric and location
