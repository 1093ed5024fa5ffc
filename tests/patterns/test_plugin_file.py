"""``expert-analyze --plugin FILE.py``: patterns from one Python file, no packaging.

The file below refines Late Sender as a filter over the public instance
table (only waits for messages from rank 0).  Expected values by hand from
the trace: rank 1 waits 0.5 s for rank 0's message and rank 0 waits 0.25 s
for rank 1's, so Late Sender is 0.75 s and the rank-0 part 0.5 s.
"""

from __future__ import annotations

import json

import pytest

import tracefmt
from analyzer.cli.analyze import main
from patterns import PatternError
from patterns.registry import patterns_from_file

PLUGIN = '''
from patterns import Pattern, late_sender_instances, wait_severity

class FromRankZero(Pattern):
    name = "mpi_latesender_from_rank0"
    parent = "mpi_latesender"
    display_name = "Late Sender from rank 0"
    unit = "sec"
    description = "Late Sender waiting time of receives whose message came from rank 0."
    diagnosis = "Look at what rank 0 does before it sends."
    requires = ("messages",)

    def compute(self, ctx):
        ls = late_sender_instances(ctx)
        return wait_severity(ls, ls["source"] == 0)
'''


def _trace(path):
    b = tracefmt.TraceBuilder()
    r0, r1 = b.location(rank=0), b.location(rank=1)
    for loc in (r0, r1):
        b.enter(loc, 0.0, "main")
    # rank 1 waits from 1.0 until rank 0 sends at 1.5
    b.enter(r0, 1.5, "MPI_Send"); b.send(r0, 1.5, dest=1, tag=1, nbytes=8); b.exit(r0, 1.6, "MPI_Send")
    b.enter(r1, 1.0, "MPI_Recv"); b.recv(r1, 1.6, source=0, tag=1, nbytes=8); b.exit(r1, 1.7, "MPI_Recv")
    # rank 0 waits from 2.0 until rank 1 sends at 2.25
    b.enter(r1, 2.25, "MPI_Send"); b.send(r1, 2.25, dest=0, tag=2, nbytes=8); b.exit(r1, 2.3, "MPI_Send")
    b.enter(r0, 2.0, "MPI_Recv"); b.recv(r0, 2.3, source=1, tag=2, nbytes=8); b.exit(r0, 2.4, "MPI_Recv")
    for loc in (r0, r1):
        b.exit(loc, 3.0, "main")
    b.write(str(path))
    return str(path)


def test_plugin_file_adds_its_patterns(tmp_path):
    plugin = tmp_path / "mine.py"
    plugin.write_text(PLUGIN)
    trace = _trace(tmp_path / "t.elg")
    js = tmp_path / "t.json"
    assert main([trace, "--plugin", str(plugin), "--json", str(js), "-o", str(tmp_path / "t.cubex"), "-q"]) == 0
    metrics = json.loads(js.read_text())["metrics"]
    assert metrics["mpi_latesender"]["total"] == pytest.approx(0.75, abs=1e-12)
    assert metrics["mpi_latesender_from_rank0"]["total"] == pytest.approx(0.5, abs=1e-12)


def test_list_patterns_shows_the_file_as_origin(tmp_path, capsys):
    plugin = tmp_path / "mine.py"
    plugin.write_text(PLUGIN)
    assert main(["--list-patterns", "--plugin", str(plugin)]) == 0
    line = next(l for l in capsys.readouterr().out.splitlines() if "mpi_latesender_from_rank0" in l)
    assert f"(file {plugin})" in line


def test_broken_or_missing_file_is_one_error(tmp_path, capsys):
    bad = tmp_path / "bad.py"
    bad.write_text("raise RuntimeError('boom')\n")
    with pytest.raises(PatternError, match=r"bad\.py: loading failed: RuntimeError: boom"):
        patterns_from_file(bad)
    trace = _trace(tmp_path / "t.elg")
    assert main([trace, "--plugin", str(tmp_path / "missing.py"), "-q"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "missing.py: no such file" in err[0]


def test_negative_top_is_refused(capsys):
    with pytest.raises(SystemExit) as e:
        main(["x.elg", "--top", "-3"])
    assert e.value.code == 2
    assert "--top must be 0 or more" in capsys.readouterr().err
