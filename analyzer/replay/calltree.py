"""Growing the unified call tree during the replay and freezing it.

While locations are walked the tree lives in :class:`CallTreeBuilder` (ids in
creation order, node 0 a virtual super-root).  :meth:`CallTreeBuilder.freeze`
renumbers it into the contract of :class:`patterns.context.CallTree`: dense
ids in depth-first pre-order, children ordered by their first visit (the
earliest ENTER time over all locations, ties by creation), one root; a
synthetic root region is used only when the trace has several roots.
"""

from __future__ import annotations

import numpy as np

from patterns.context import CallTree

from .kernels.bundles import TreeState

__all__ = ["CallTree", "CallTreeBuilder", "SYNTHETIC_ROOT_NAME"]

#: name of the region given to a synthesized root when a trace has several roots
SYNTHETIC_ROOT_NAME = "<program>"


class CallTreeBuilder:
    def __init__(self, capacity: int = 256):
        self.parent = np.full(capacity, -1, np.int32)
        self.region = np.full(capacity, -1, np.int32)
        self.first_child = np.full(capacity, -1, np.int32)
        self.next_sibling = np.full(capacity, -1, np.int32)
        self.first_visit = np.full(capacity, np.inf, np.float64)
        self.n_nodes = 1  # node 0: virtual super-root

    def state(self) -> TreeState:
        """The tree as the replay kernel takes it."""
        return TreeState(self.parent, self.region, self.first_child, self.next_sibling, self.first_visit,
                         self.n_nodes)

    def update(self, state: TreeState) -> None:
        """Take the tree a kernel returned (its arrays may be new)."""
        self.parent, self.region = state.parent, state.region
        self.first_child, self.next_sibling, self.first_visit = state.first_child, state.next_sibling, \
            state.first_visit
        self.n_nodes = int(state.n_nodes)

    def freeze(self, synthetic_root_region: int) -> tuple[CallTree, np.ndarray, bool]:
        """Return ``(tree, new_id_of_builder_node, synthesized)``.

        ``new_id_of_builder_node[b]`` is the final id of builder node ``b``
        (the super-root maps to the real root when there is exactly one,
        else to the synthetic root).
        """
        n = self.n_nodes
        parent = self.parent[:n]
        region = self.region[:n]
        children: list[list[int]] = [[] for _ in range(n)]
        for b in range(1, n):
            children[int(parent[b])].append(b)
        key = self.first_visit[:n]
        for lst in children:
            if len(lst) > 1:
                lst.sort(key=lambda b: (key[b], b))
        roots = children[0]
        synthesized = len(roots) != 1
        order: list[int] = []
        if synthesized:
            stack = [0]
        else:
            stack = [roots[0]] if roots else []
        while stack:
            b = stack.pop()
            order.append(b)
            stack.extend(reversed(children[b]))
        new_id = np.full(n, -1, np.int64)
        new_id[np.asarray(order, np.int64)] = np.arange(len(order))
        if not synthesized:
            new_id[0] = new_id[roots[0]]
        order_a = np.asarray(order, np.int64)
        t_parent = np.where(parent[order_a] >= 0, new_id[np.maximum(parent[order_a], 0)], -1).astype(np.int32)
        t_region = region[order_a].astype(np.int32)
        if synthesized:
            t_region[0] = synthetic_root_region
            t_parent[0] = -1
        else:
            t_parent[0] = -1
        tree = CallTree(parent=t_parent, region=t_region, callsite=np.full(len(order), -1, np.int32))
        return tree, new_id, synthesized
