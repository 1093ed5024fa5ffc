"""expert-run's own command line: help text and usage errors (no runtime library needed)."""
import subprocess

from runtime_harness import EXPERT_RUN


def _run(*args):
    return subprocess.run(["bash", str(EXPERT_RUN), *args], capture_output=True, text=True, timeout=30)


def test_help_is_the_comment_block_only():
    p = _run("--help")
    assert p.returncode == 0
    assert p.stdout.startswith("expert-run - trace")
    assert "docs/runtime.md" in p.stdout.splitlines()[-1]
    # the script's code must not leak into the help text
    assert "set -euo" not in p.stdout and "here=" not in p.stdout


def test_no_program_prints_usage_and_fails():
    p = _run()
    assert p.returncode == 2
    assert "expert-run [-o FILE]" in p.stdout and "set -euo" not in p.stdout


def test_unknown_option_is_one_line():
    p = _run("--bogus", "true")
    assert p.returncode == 2
    assert p.stderr.strip() == "expert-run: unknown option --bogus (see expert-run --help)"
