"""remap_cnodes: builder call-tree ids to final ones, in every cnode column, as the obvious lookup gives them."""

from __future__ import annotations

import numpy as np
import pytest

from analyzer.replay.matching import remap_cnodes
from patterns.tables import Table


def _reference(v, new_id):
    return [-1 if x < 0 else int(new_id[x]) for x in np.asarray(v).tolist()]


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_cnode_columns_take_their_final_ids(dtype):
    rng = np.random.default_rng(3)
    new_id = rng.permutation(50).astype(np.int64)
    cnode = rng.integers(-3, 50, 500).astype(dtype)  # -1 is none; -2, -3 are none as well
    send_cnode = rng.integers(0, 50, 500).astype(dtype)
    other = rng.integers(0, 50, 500).astype(dtype)
    before = cnode.copy()
    table = Table({"cnode": cnode, "send_cnode": send_cnode, "region": other})
    remap_cnodes(table, new_id)
    assert table["cnode"].tolist() == _reference(cnode, new_id)
    assert table["send_cnode"].tolist() == _reference(send_cnode, new_id)
    assert table["cnode"].dtype == np.int32 and table["send_cnode"].dtype == np.int32
    assert table["region"] is other  # not a call path: untouched
    assert np.array_equal(cnode, before)  # the column given is not written to (it may be another's too)


@pytest.mark.parametrize("dtype", [np.int32, np.int64])
def test_a_node_outside_the_tree_is_an_index_error(dtype):
    with pytest.raises(IndexError):
        remap_cnodes(Table({"cnode": np.array([0, 7], dtype)}), np.arange(3, dtype=np.int64))
