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


def test_missing_and_non_executable_programs_are_told_apart(tmp_path):
    p = _run(str(tmp_path / "nosuch"))
    assert p.returncode == 2 and p.stderr.strip() == f"expert-run: program not found: {tmp_path / 'nosuch'}"
    (tmp_path / "src.c").write_text("int main(void) { return 0; }\n")
    p = _run(str(tmp_path / "src.c"))
    assert p.returncode == 2 and "not an executable file" in p.stderr
    p = _run(str(tmp_path))  # a directory has the x bit but is no program
    assert p.returncode == 2 and "not an executable file" in p.stderr
