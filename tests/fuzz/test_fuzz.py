"""The fuzz harness at a small size (issue 18, item 7): a few mutants of every input kind through every
command that takes it give a result or our one-line error: no traceback, no hang, no memory overrun.
``python -m benchmarks fuzz --mutants 5000`` runs the campaign (docs/robustness.md has its numbers)."""

import random

import pytest

import fuzzing


@pytest.fixture(scope="module")
def worker():
    w = fuzzing.Worker()
    yield w
    w.close()


@pytest.mark.parametrize("kind", sorted(fuzzing.KINDS))
def test_a_few_mutants_of_every_kind_give_no_traceback_hang_or_overrun(tmp_path, worker, kind):
    findings = []
    counts = fuzzing.campaign(kind, 2 * len(fuzzing.KINDS[kind]), tmp_path, seed_number=7, timeout=30,
                              worker=worker, findings=findings)
    assert findings == []
    assert counts["mutants"] == 2 * len(fuzzing.KINDS[kind])
    assert counts["ok"] + counts["clean"] == counts["mutants"]


def test_the_harness_sees_a_traceback_a_hang_and_a_clean_error(tmp_path, worker):
    """The outcomes are told apart: the checks above can fail."""
    bad = tmp_path / "x.cubex"
    bad.write_bytes(b"not a cube")
    assert worker.run("expert-report", bad, bad, tmp_path, 30)["outcome"] == "clean"
    r = fuzzing.run_one_in_worker(worker, "raise", 30)
    assert r["outcome"] == "traceback" and "ZeroDivisionError" in r["last"]
    assert fuzzing.run_one_in_worker(worker, "sleep", 0.5)["outcome"] == "hang"


def test_mutations_change_the_bytes_in_every_way():
    rng = random.Random(1)
    data = bytes(range(256)) * 4
    mutants = [fuzzing.mutate_bytes(rng, data) for _ in range(200)]
    assert any(len(m) < len(data) for m in mutants) and any(len(m) > len(data) for m in mutants)
    assert sum(m != data for m in mutants) > 150


# ---------------------------------------------------------------------------------- what campaigns found
def test_an_epilog_communicator_of_an_undefined_group_is_our_error():
    """An EPIK mutant whose communicator names a group id the file never defines gave a ValueError traceback
    (the native encoding of the foreign definitions) in every trace command."""
    import tracefmt
    from tracefmt.foreign import TraceAssembly

    asm = TraceAssembly(source="/x/epik_a", creator="EPILOG")
    asm.comms[0] = (8192, "", -1)
    with pytest.raises(tracefmt.TraceFormatError, match=r"^/x/epik_a: inconsistent definitions: .*undefined group"):
        asm.to_trace()


def test_an_otf2_clock_of_zero_ticks_per_second_is_our_error(tmp_path, monkeypatch):
    """An OTF2 mutant whose clock properties give a timer resolution of 0 gave a ZeroDivisionError (exit 3)."""
    import otf2_bytes
    from tracefmt import TraceFormatError
    from tracefmt.detect import open_any

    comp = otf2_bytes.Enc.comp
    first = []

    def zero_resolution(self, v, *width):  # the first 10^9 written is the resolution in the clock properties
        if v == 1_000_000_000 and not first:
            first.append(v)
            v = 0
        return comp(self, v, *width)

    monkeypatch.setattr(otf2_bytes.Enc, "comp", zero_resolution)
    archive = otf2_bytes.write_archive(tmp_path / "a").parent
    assert first
    with pytest.raises(TraceFormatError, match=r"traces\.def: .*timer resolution of 0"):
        open_any(archive)
