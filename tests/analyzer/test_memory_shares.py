"""``expert-analyze --memory LIMIT``: a trace whose analysis exceeds the limit runs in shares of whole
processes, spilled to disk between steps, and gives the JSON summary of the analysis in one piece.

The per-event constants of ``analyzer.distributed.memory`` are made large here so that these small traces
need several shares; the peak memory itself is measured by ``python -m benchmarks scaling`` (not here).
"""

from __future__ import annotations

import os

import pytest

from analyzer.cli.analyze import main
from analyzer.distributed import memory
from random_hybrid_traces import random_builder

ROOT_CAUSE = "delay,critical_path,performance_impact,pop_resources"


@pytest.fixture
def tiny_budget(monkeypatch):
    """1 KB per event and no base: a limit of E x 500 B then needs two or more shares."""
    monkeypatch.setattr(memory, "BASE_BYTES", 0)
    monkeypatch.setattr(memory, "ROOT_CAUSE_BASE_BYTES", 0)
    monkeypatch.setattr(memory, "WHOLE_BYTES_PER_EVENT", 1000.0)
    monkeypatch.setattr(memory, "SHARE_BYTES_PER_EVENT", 1000.0)
    monkeypatch.setattr(memory, "FALLBACK_BYTES_PER_EVENT", 0.0)
    monkeypatch.setattr(memory, "WHOLE_ROOT_CAUSE_BYTES_PER_EVENT", 1000.0)
    monkeypatch.setattr(memory, "SHARE_ROOT_CAUSE_BYTES_PER_EVENT", 1000.0)


def _events(path) -> int:
    import tracefmt

    t = tracefmt.open(path)
    return sum(int(t.n_events(int(l))) for l in t.location_ids)


def _largest_process(path) -> int:
    import tracefmt

    t = tracefmt.open(path)
    by_proc = {}
    for l in t.location_ids:
        p = t.defs.locations[int(l)].process
        by_proc[p] = by_proc.get(p, 0) + int(t.n_events(int(l)))
    return max(by_proc.values())


@pytest.mark.parametrize("seed,kw", [(31, {}), (32, {"tasks": True, "deps": True}), (33, {"tasks": True, "rma": True})])
@pytest.mark.parametrize("fraction", [0.6, 0.0])
def test_memory_limit_gives_the_json_of_one_piece(tmp_path, tiny_budget, capsys, seed, kw, fraction):
    # fraction 0.0: the least a share may get (the largest process), so as many shares as processes
    trace = tmp_path / "t.elg"
    random_builder(seed, n_ranks=5, n_threads=2, steps=20, **kw).write(trace)
    whole, bounded = tmp_path / "whole.json", tmp_path / "bounded.json"
    for without in ("", ROOT_CAUSE):  # with the root-cause patterns (by shares, their data mapped) and without
        extra = ["--without", without] if without else []
        assert main([str(trace), "-j", "1", "--json", str(whole), "-o", str(tmp_path / "w.cubex"), "-q",
                     "--memory", "1T", *extra]) == 0
        limit = int(max(_events(trace) * fraction, _largest_process(trace) / 0.8 + 1) * 1000)
        spill = tmp_path / "spill"
        spill.mkdir(exist_ok=True)
        capsys.readouterr()
        assert main([str(trace), "--json", str(bounded), "-o", str(tmp_path / "b.cubex"), "--memory", str(limit),
                     "--spill-dir", str(spill), *extra]) == 0
        err = capsys.readouterr().err
        assert "shares of whole processes" in err, err  # it did run in shares, and said so
        assert bounded.read_bytes() == whole.read_bytes()
        assert os.listdir(spill) == []  # the spill directory is cleaned up


def test_a_process_bigger_than_the_limit_is_one_clear_line(tmp_path, tiny_budget, capsys):
    trace = tmp_path / "t.elg"
    random_builder(34, n_ranks=3, n_threads=2, steps=20).write(trace)
    assert main([str(trace), "-q", "--memory", "1000", "-o", str(tmp_path / "x.cubex")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "holds at least one whole process" in err[0], err


#: a plugin pattern without a scope ("global": its tables gathered whole to share 0)
GLOBAL_PLUGIN = '''
import numpy as np
from patterns import Pattern

class EveryMessage(Pattern):
    name = "every_message"
    display_name = "Every message"
    unit = "occ"
    description = "Messages of the run, at the root of every location."
    diagnosis = "A test pattern."
    requires = ("messages",)

    def compute(self, ctx):
        out = np.zeros((ctx.n_cnodes, ctx.n_locations))
        out[0] = len(ctx.table("messages"))
        return out
'''


def test_global_patterns_that_cannot_fit_say_how_to_leave_them_out(tmp_path, monkeypatch, capsys):
    trace = tmp_path / "t.elg"
    random_builder(35, n_ranks=3, n_threads=2, steps=20).write(trace)
    plugin = tmp_path / "mine.py"
    plugin.write_text(GLOBAL_PLUGIN)
    monkeypatch.setattr(memory, "BASE_BYTES", 0)
    monkeypatch.setattr(memory, "FALLBACK_BYTES_PER_EVENT", 10_000.0)
    limit = str(_events(trace) * 5_000)
    assert main([str(trace), "-q", "--memory", limit, "--plugin", str(plugin), "-o", str(tmp_path / "x.cubex")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--without" in err[0] and "every_message" in err[0], err
    # the root-cause patterns run by shares: they are not such patterns
    assert main([str(trace), "-q", "--memory", limit, "-o", str(tmp_path / "y.cubex")]) == 0


@pytest.mark.parametrize("text,value", [("4G", 4 << 30), ("512MiB", 512 << 20), ("1.5k", 1536), ("2000", 2000)])
def test_sizes(text, value):
    assert memory.parse_size(text) == value


def test_percent_is_of_the_available_memory():
    assert 0 < memory.parse_size("10%") <= memory.available_bytes() // 10 + 1


@pytest.mark.parametrize("text", ["", "x", "-1G", "0", "4Q"])
def test_bad_sizes_are_one_line(text):
    with pytest.raises(ValueError, match="give a size|more than 0"):
        memory.parse_size(text)


def test_a_truncated_trace_salvaged_in_shares_gives_the_json_of_one_piece(tmp_path, tiny_budget):
    # what survived of a cut trace, and the problems saying what was lost, are the same in shares
    whole_trace = tmp_path / "t.elg"
    random_builder(51, n_ranks=5, n_threads=2, steps=30).write(whole_trace)
    data = whole_trace.read_bytes()
    cut = tmp_path / "cut.elg"
    cut.write_bytes(data[: int(len(data) * 0.7)])
    one, shares = tmp_path / "one.json", tmp_path / "shares.json"
    assert main([str(cut), "-q", "--salvage", "--json", str(one), "-o", str(tmp_path / "1.cubex"),
                 "--memory", "1T"]) == 0
    limit = int(max(_events(cut) * 0.6, _largest_process(cut) / 0.8 + 1) * 1000)
    assert main([str(cut), "-q", "--salvage", "--json", str(shares), "-o", str(tmp_path / "2.cubex"),
                 "--memory", str(limit)]) == 0
    assert shares.read_bytes() == one.read_bytes()
    from analyzer.analyze import analyze

    whole = analyze(str(cut), salvage=True)
    split = analyze(str(cut), salvage=True, memory=limit)
    assert any("truncated" in p for p in whole.problems)
    assert split.problems == whole.problems and split.context.problems == whole.context.problems


def test_every_array_mapped_gives_the_json_of_one_piece(tmp_path, tiny_budget, monkeypatch):
    """With every array of the shares' data mapped (a small trace's are all under the usual threshold), the
    root-cause analysis over mapped data gives the JSON of the analysis in one piece."""
    from analyzer.distributed import mapped

    monkeypatch.setattr(mapped, "MIN_BYTES", 1)
    trace = tmp_path / "t.elg"
    random_builder(36, n_ranks=5, n_threads=2, steps=25, tasks=True).write(trace)
    whole, bounded = tmp_path / "whole.json", tmp_path / "bounded.json"
    assert main([str(trace), "-q", "--json", str(whole), "-o", str(tmp_path / "w.cubex"), "--memory", "1T"]) == 0
    limit = int(max(_events(trace) * 0.4, _largest_process(trace) / 0.8 + 1) * 1000)
    assert main([str(trace), "-q", "--json", str(bounded), "-o", str(tmp_path / "b.cubex"), "--memory", str(limit)]) == 0
    assert bounded.read_bytes() == whole.read_bytes()



def test_the_root_cause_plan_keeps_its_shares_within_the_mapped_pages_budget(tmp_path, tiny_budget, monkeypatch):
    """With the root-cause analysis the plan sizes the shares for ROOT_CAUSE_BUDGET of the limit (the part the
    mapped pages are kept under) above its own base: a limit the largest process fits only in whole is refused
    there, in one line that names the limit it needs, and taken without the root-cause analysis."""
    import tracefmt

    trace = tmp_path / "t.elg"
    random_builder(36, n_ranks=3, n_threads=2, steps=20).write(trace)
    t = tracefmt.open(str(trace))
    big = _largest_process(trace)
    monkeypatch.setattr(memory, "ROOT_CAUSE_BASE_BYTES", 100_000)
    limit = big * 1000 + 100_000  # the largest process and the base: all of the limit, more than 90 % of it
    assert memory.plan_memory(t, limit, (), root_cause=False).n_shares >= 2
    with pytest.raises(ValueError) as err:
        memory.plan_memory(t, limit, (), root_cause=True)
    need = (big * 1000 + 100_000) / memory.ROOT_CAUSE_BUDGET
    assert "largest process" in str(err.value) and f"{need / 2**20:.0f} MiB" in str(err.value)
    assert memory.plan_memory(t, int(need) + 1, (), root_cause=True).n_shares >= 2
