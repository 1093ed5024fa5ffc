"""Run the example pipeline of docs/ci.md: its Trace, Analyze, Gate and Report steps, verbatim.

The steps compile and trace a real MPI + OpenMP program (samples/waits) with
the C runtime.  A baseline is recorded from the unchanged program; the same
run then passes the gate, and one with a larger Late Sender fails it (exit 1)
naming the metric and the call path.  Console scripts are provided as small shims that
call the same entry points, so the test does not depend on the install state.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "ci.md"
SCRIPTS = {
    "expert-analyze": "analyzer.cli.analyze:main",
    "expert-check": "analyzer.cli.tools:check_main",
    "expert-report": "analyzer.cli.tools:report_main",
    "expert-diff": "analyzer.cli.tools:diff_main",
}


def workflow_steps() -> dict[str, str]:
    """name -> shell text of every `run:` step in the YAML block of docs/ci.md."""
    text = DOC.read_text()
    yaml = re.search(r"```yaml\n(.*?)```", text, re.S).group(1)
    steps: dict[str, str] = {}
    lines = yaml.splitlines()
    i = 0
    name = None
    while i < len(lines):
        line = lines[i]
        m = re.match(r"\s*- name: (.+)", line)
        if m:
            name = m.group(1).strip()
        m = re.match(r"(\s*)run: (.*)", line)
        if m and name:
            indent, rest = len(m.group(1)), m.group(2)
            if rest.strip() == "|":
                body = []
                i += 1
                while i < len(lines) and (not lines[i].strip() or len(lines[i]) - len(lines[i].lstrip()) > indent):
                    body.append(lines[i].strip())
                    i += 1
                steps[name] = "\n".join(body)
                name = None
                continue
            steps[name] = rest
            name = None
        i += 1
    return steps


@pytest.fixture
def ci_env(tmp_path):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    for name, target in list(SCRIPTS.items()) + [("python", None)]:
        p = bindir / name
        if target is None:
            p.write_text(f'#!/bin/sh\nexec "{sys.executable}" "$@"\n')
        else:
            mod, fn = target.split(":")
            p.write_text(f'#!{sys.executable}\nimport sys\nfrom {mod} import {fn}\nsys.exit({fn}())\n')
        p.chmod(p.stat().st_mode | stat.S_IEXEC)
    work = tmp_path / "repo"
    work.mkdir()
    # the steps run in a checkout: give them the sample program they build
    (work / "samples" / "waits").mkdir(parents=True)
    shutil.copy(ROOT / "samples" / "waits" / "hybrid_waits.c", work / "samples" / "waits")
    env = dict(os.environ)
    env["PATH"] = os.pathsep.join([str(bindir), str(ROOT / "runtime" / "bin"), env["PATH"]])
    env["PYTHONPATH"] = str(ROOT) + (os.pathsep + env["PYTHONPATH"] if env.get("PYTHONPATH") else "")
    env["GITHUB_STEP_SUMMARY"] = str(tmp_path / "summary.md")
    return work, env


def run_step(script: str, cwd: Path, env: dict, **extra) -> subprocess.CompletedProcess:
    return subprocess.run(["bash", "-eo", "pipefail", "-c", script], cwd=cwd, env={**env, **extra},
                          capture_output=True, text=True, timeout=300)


@pytest.mark.slow
@pytest.mark.runtime
def test_example_pipeline(ci_env):
    work, env = ci_env
    for tool in ("mpicc", "mpirun"):
        if shutil.which(tool) is None:
            pytest.skip(f"{tool} is not installed (./dev setup installs Open MPI)")
    steps = workflow_steps()
    assert {"Install", "Build", "Trace", "Analyze", "Gate", "Report"} <= set(steps)
    r = run_step(steps["Build"], work, env)
    assert r.returncode == 0, r.stdout + r.stderr

    # record the baseline as docs/ci.md says: Trace + Analyze on the reference version, keep run.json
    for name in ("Trace", "Analyze"):
        r = run_step(steps[name], work, env)
        assert r.returncode == 0, r.stdout + r.stderr
    (work / "perf").mkdir()
    shutil.copy(work / "run.json", work / "perf" / "baseline.json")

    # unchanged program: the gate passes and the report is written
    for name in ("Trace", "Analyze", "Gate", "Report"):
        r = run_step(steps[name], work, env)
        assert r.returncode == 0, f"{name}: {r.stdout}{r.stderr}"
    assert (work / "report.html").stat().st_size > 0
    assert "passed" in Path(env["GITHUB_STEP_SUMMARY"]).read_text()

    # a larger Late Sender: the gate fails with exit 1, naming the metric and its call path
    for name in ("Trace", "Analyze"):
        assert run_step(steps[name], work, env, LATE_SENDER="0.5").returncode == 0
    r = run_step(steps["Gate"], work, env)
    assert r.returncode == 1, r.stdout + r.stderr
    fail = [l for l in r.stdout.splitlines() if l.startswith("FAIL")]
    assert any("mpi_latesender" in l for l in fail)
    assert "main/late_sender_phase/MPI_Recv" in r.stdout
    junit = (work / "expert-check.xml").read_text()
    assert 'failures="2"' in junit and "main/late_sender_phase/MPI_Recv" in junit
