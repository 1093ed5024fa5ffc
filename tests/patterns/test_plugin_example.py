"""The example plugin package in samples/plugin_example.

Three levels: the pattern's formula on a hand-made messages table; discovery
through a temporary ``.dist-info`` built from the sample's own pyproject.toml
(in-process, nothing installed into the venv, so other tests never see the
plugin); and a real ``pip install --target`` of the package, loaded in a
fresh interpreter.
"""

from __future__ import annotations

import importlib
import json
import math
import os
import shutil
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import numpy as np
import pytest

from patterns.context import AnalysisContext, CallTree
from patterns.tables import MESSAGES, Table
from patterns import registry
from tracefmt.layout import Paradigm, Role

ROOT = Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "samples" / "plugin_example"
NAN = math.nan


@pytest.fixture
def plugin_on_path(monkeypatch, tmp_path):
    """Make the sample importable and discoverable as if installed (a dist-info on sys.path)."""
    meta = tomllib.loads((SAMPLE / "pyproject.toml").read_text())
    project = meta["project"]
    eps = project["entry-points"]["expert.patterns"]
    dist = tmp_path / f"{project['name'].replace('-', '_')}-{project['version']}.dist-info"
    dist.mkdir()
    (dist / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {project['name']}\nVersion: {project['version']}\n")
    (dist / "entry_points.txt").write_text(
        "[expert.patterns]\n" + "".join(f"{k} = {v}\n" for k, v in eps.items())
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    monkeypatch.syspath_prepend(str(SAMPLE / "src"))
    importlib.invalidate_caches()
    yield project
    sys.modules.pop("expert_patterns_example", None)


# --------------------------------------------------------------------------
# the formula
# --------------------------------------------------------------------------
def messages_ctx(rows):
    regions = ["main", "MPI_Recv", "MPI_Waitall", "MPI_Testall"]
    roles = [Role.FUNCTION, Role.MPI_POINT2POINT, Role.MPI_POINT2POINT, Role.MPI_POINT2POINT]
    cols = {}
    for name, dt in MESSAGES.items():
        default = NAN if dt == "f8" else (0 if dt == "u1" else -1)
        cols[name] = np.array([r.get(name, default) for r in rows], dtype=dt)
    n_c, n_l = 4, 2  # main, main/MPI_Recv, main/MPI_Waitall, main/MPI_Testall; two ranks
    return AnalysisContext(
        trace=None,
        calltree=CallTree(np.array([-1, 0, 0, 0], np.int32), np.array([0, 1, 2, 3], np.int32),
                          np.full(n_c, -1, np.int32)),
        n_locations=n_l,
        location_process=np.array([0, 1], np.int32),
        location_thread=np.array([0, 0], np.int32),
        region_name=regions,
        region_paradigm=np.array([Paradigm.USER, Paradigm.MPI, Paradigm.MPI, Paradigm.MPI], np.uint8),
        region_role=np.array(roles, np.uint8),
        visits=np.ones((n_c, n_l), np.int64),
        # each call path holds 10 s on each rank: more than the waits charged to it, as in a real trace
        # (waits beyond a call's own time are scaled down to it: patterns.instances.within_call_time)
        excl_time=np.full((n_c, n_l), 10.0),
        incl_time=np.full((n_c, n_l), 10.0),
        tables={"messages": Table(cols)},
    )


def msg(call, region, cnode, recv_enter, recv_exit, send_enter, nbytes):
    return dict(recv_loc=1, recv_call=call, recv_region=region, recv_cnode=cnode, recv_enter=recv_enter,
                recv_exit=recv_exit, send_enter=send_enter, bytes=nbytes, send_loc=0)


def test_short_message_wait_formula(plugin_on_path):
    from expert_patterns_example import ShortMessagesWait

    rows = [
        msg(1, 1, 1, 1.0, 2.0, 1.5, 8),  # short, late sender: 0.5
        msg(2, 1, 1, 3.0, 3.2, 3.5, 100),  # clamped to the receive's exit: 0.2
        msg(3, 1, 1, 4.0, 5.0, 4.7, 4096),  # 4096 bytes is not short
        msg(4, 1, 1, 6.0, 7.0, 5.0, 8),  # sender was early: no wait
        # a Waitall completing three messages: only the largest wait counts, once
        msg(5, 2, 2, 8.0, 9.0, 8.3, 16),
        msg(5, 2, 2, 8.0, 9.0, 8.6, 32),  # largest, short: 0.6
        msg(5, 2, 2, 8.0, 9.0, 8.1, 1 << 20),
        # a Waitall whose largest wait belongs to a long message: not a short-message wait
        msg(6, 2, 2, 10.0, 11.0, 10.2, 16),
        msg(6, 2, 2, 10.0, 11.0, 10.9, 1 << 20),
        msg(7, 3, 3, 12.0, 13.0, 12.5, 8),  # MPI_Testall never waits
    ]
    ctx = messages_ctx(rows)
    got = ShortMessagesWait().compute(ctx).to_dense(ctx.n_cnodes, ctx.n_locations)
    want = np.zeros((4, 2))
    want[1, 1] = 0.5 + 0.2
    want[2, 1] = 0.6
    np.testing.assert_allclose(got, want, atol=1e-12)

    class Tiny(ShortMessagesWait):
        max_bytes = 10  # a site-specific threshold by subclassing

    got = Tiny().compute(ctx).to_dense(4, 2)
    want = np.zeros((4, 2))
    want[1, 1] = 0.5
    np.testing.assert_allclose(got, want, atol=1e-12)


def test_the_example_is_a_filter_over_the_public_late_sender_instances(plugin_on_path):
    """A plugin author imports from ``patterns`` only, and refines Late Sender through its instance table."""
    import ast

    src = (SAMPLE / "src" / "expert_patterns_example" / "__init__.py").read_text()
    imported = {n.module for n in ast.walk(ast.parse(src)) if isinstance(n, ast.ImportFrom)}
    imported |= {a.name for n in ast.walk(ast.parse(src)) if isinstance(n, ast.Import) for a in n.names}
    assert imported == {"__future__", "patterns"}
    assert "late_sender_instances" in src

    from expert_patterns_example import ShortMessagesWait
    from patterns import late_sender_instances

    # the same hand-made rows as above: the plugin keeps the Late Sender instances below 4096 bytes
    ctx = messages_ctx([msg(1, 1, 1, 1.0, 2.0, 1.5, 8), msg(3, 1, 1, 4.0, 5.0, 4.7, 4096)])
    assert late_sender_instances(ctx)["wait"].tolist() == pytest.approx([0.5, 0.7])
    got = ShortMessagesWait().compute(ctx).to_dense(ctx.n_cnodes, ctx.n_locations)
    assert got[1, 1] == pytest.approx(0.5) and got.sum() == pytest.approx(0.5)


# --------------------------------------------------------------------------
# discovery
# --------------------------------------------------------------------------
def test_registry_finds_the_plugin_through_its_entry_point(plugin_on_path):
    pats = registry.load_patterns(["mpi_short_messages_wait"])
    names = [p.name for p in pats]
    assert names[-1] == "mpi_short_messages_wait"
    assert names.index("mpi_latesender") < names.index("mpi_short_messages_wait")
    plugin = pats[-1]
    assert plugin.origin == ("plugin expert-patterns-example 0.1.0, entry point mpi_short_messages_wait = "
                             "expert_patterns_example:ShortMessagesWait")
    assert "mpi_short_messages_wait" not in [p.name for p in registry.load_patterns(plugins=False)]
    tree = registry.format_hierarchy(origins=False).splitlines()
    (line,) = [ln for ln in tree if "mpi_short_messages_wait" in ln]
    (parent,) = [ln for ln in tree if ln.lstrip().startswith("mpi_latesender [")]
    assert len(line) - len(line.lstrip()) == len(parent) - len(parent.lstrip()) + 2


def test_plugin_runs_beside_builtins_on_a_replayed_trace(plugin_on_path):
    """Late sender with a short and a long message; the plugin reports the short one's wait only."""
    import tracefmt
    from analyzer.replay import replay

    b = tracefmt.TraceBuilder()
    r0, r1 = b.location(rank=0, thread=0), b.location(rank=1, thread=0)
    for r in (r0, r1):
        b.enter(r, 0.0, "main")
    # message 1: 64 bytes, receiver waits 1.0 - 0.25 = 0.75
    b.enter(r1, 0.25, "MPI_Recv"); b.recv(r1, 1.5, source=0, tag=1, nbytes=64); b.exit(r1, 1.5, "MPI_Recv")
    b.enter(r0, 1.0, "MPI_Send"); b.send(r0, 1.0, dest=1, tag=1, nbytes=64); b.exit(r0, 1.25, "MPI_Send")
    # message 2: 1 MiB, receiver waits 3.0 - 2.0 = 1.0 (Late Sender, but not short)
    b.enter(r1, 2.0, "MPI_Recv"); b.recv(r1, 3.5, source=0, tag=2, nbytes=1 << 20); b.exit(r1, 3.5, "MPI_Recv")
    b.enter(r0, 3.0, "MPI_Send"); b.send(r0, 3.0, dest=1, tag=2, nbytes=1 << 20); b.exit(r0, 3.25, "MPI_Send")
    for r in (r0, r1):
        b.exit(r, 4.0, "main")
    ctx = replay(b.build())
    pats = registry.load_patterns(["mpi_latesender", "mpi_short_messages_wait"])
    for p in pats:
        res = p.compute(ctx)
        ctx.results[p.name] = res if isinstance(res, np.ndarray) else res.to_dense(ctx.n_cnodes, ctx.n_locations)
    short, late = ctx.results["mpi_short_messages_wait"], ctx.results["mpi_latesender"]
    recv_cnode = [c for c in range(ctx.n_cnodes) if ctx.calltree.path(c, ctx.region_name) == "main/MPI_Recv"]
    assert short.sum() == pytest.approx(0.75) and short[recv_cnode[0], r1] == pytest.approx(0.75)
    assert late.sum() == pytest.approx(1.75)
    assert np.all(short <= late + 1e-12)  # inclusive along the metric tree


# --------------------------------------------------------------------------
# the real package, installed with pip
# --------------------------------------------------------------------------
@pytest.mark.slow
def test_pip_installed_package_is_discovered(tmp_path):
    target = tmp_path / "site"
    # build from a copy so the build's by-products stay out of the source tree
    src = tmp_path / "plugin_example"
    shutil.copytree(SAMPLE, src, ignore=shutil.ignore_patterns("build", "*.egg-info", "__pycache__"))
    # --no-build-isolation: build with the venv's setuptools, offline; --target keeps the venv clean
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--no-build-isolation", "--no-index",
         "--target", str(target), str(src)],
        check=True, capture_output=True, text=True, timeout=240, cwd=tmp_path,
    )
    script = textwrap.dedent(
        """
        import json
        from patterns import load_patterns
        p = [p for p in load_patterns(["mpi_short_messages_wait"]) if p.name == "mpi_short_messages_wait"][0]
        print(json.dumps({"origin": p.origin, "module": type(p).__module__, "parent": p.parent}))
        """
    )
    env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(target), str(ROOT)]))
    out = subprocess.run([sys.executable, "-c", script], check=True, capture_output=True, text=True, env=env,
                         timeout=120, cwd=tmp_path)
    got = json.loads(out.stdout.strip().splitlines()[-1])
    assert got == {
        "origin": "plugin expert-patterns-example 0.1.0, entry point mpi_short_messages_wait = "
                  "expert_patterns_example:ShortMessagesWait",
        "module": "expert_patterns_example",
        "parent": "mpi_latesender",
    }
