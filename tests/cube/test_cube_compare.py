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
