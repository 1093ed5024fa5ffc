"""Shared helpers for the POMP / expert-instrument tests (paths, running commands, building the runtime)."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
RUNTIME = ROOT / "runtime"
SAMPLES = ROOT / "samples" / "pomp"
EXPERT_CC = RUNTIME / "bin" / "expert-cc"
EXPERT_RUN = RUNTIME / "bin" / "expert-run"
EXPERT_INSTRUMENT = RUNTIME / "bin" / "expert-instrument"

sys.path.insert(0, str(RUNTIME / "opari"))


def need(tool):
    if shutil.which(tool) is None:
        pytest.skip(f"{tool} is not installed (optional tool chain)")


def run(cmd, cwd, env=None, check=True, timeout=120):
    full_env = dict(os.environ, **(env or {}))
    p = subprocess.run([str(c) for c in cmd], cwd=cwd, env=full_env, capture_output=True, text=True,
                       timeout=timeout)
    if check and p.returncode != 0:
        raise AssertionError(f"{cmd} failed ({p.returncode}):\n{p.stdout}\n{p.stderr}")
    return p
