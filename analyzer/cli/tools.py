"""Command-line entry points: expert-diff, expert-check, expert-report, expert-profile.

Every command exits 2 with a one-line ``<prog>: error: ...`` message on bad
input (missing or unreadable file, unknown metric, malformed threshold),
never with a traceback.  A command is the options it takes and what it does
with them; :func:`_command` makes the entry point that parses the command
line, runs it and turns the command's input errors into that message.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import sys


def quiet_on_closed_pipe(main):
    """Let `expert-xxx ... | head` end quietly: a closed stdout is not an error, nor is Ctrl-C a traceback."""

    @functools.wraps(main)
    def wrapped(*args, **kwargs):
        try:
            return main(*args, **kwargs)
        except BrokenPipeError:
            # the reader went away; point stdout at /dev/null so the exit flush cannot fail again
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
            return 0
        except KeyboardInterrupt:
            return 130

    return wrapped


class UsageError(Exception):
    """Bad input that a command finds itself (an option's value, an output that cannot be written)."""


def _fail(prog: str, message: str) -> int:
    from tracefmt.names import printable  # one line, whatever the names in the message hold

    print(f"{prog}: error: {printable(message)}", file=sys.stderr)
    return 2


def _command(prog: str, arguments, run, errors, epilog: str | None = None, on_error=None):
    """The entry point ``main(argv=None) -> int`` of a command; its description is ``run``'s docstring.

    It parses ``argv`` with the options ``arguments(parser)`` adds and returns
    ``run(args)``.  An exception of the types ``errors()`` names (imported
    when the command runs) or a :class:`UsageError` is reported in one line
    and gives exit status 2, after ``on_error(args, message)`` if given.
    """
    description = " ".join(run.__doc__.split())

    @quiet_on_closed_pipe
    def main(argv=None) -> int:
        ap = argparse.ArgumentParser(prog=prog, description=description, epilog=epilog)
        arguments(ap)
        a = ap.parse_args(argv)
        try:
            return run(a)
        except (UsageError, *errors()) as e:
            if on_error is not None:
                try:
                    on_error(a, str(e))
                except UsageError as also:  # its report of the error cannot be written either: one line
                    return _fail(prog, str(e) if str(also) == str(e) else f"{e}; and {also}")
            return _fail(prog, str(e))

    main.__doc__ = f"{prog}: {description}"
    return main


def _write(path: str, text: str) -> None:
    """Write a text output (its folder made if missing); a file system error becomes a :class:`UsageError`."""
    try:
        d = os.path.dirname(os.path.abspath(path))
        os.makedirs(d, exist_ok=True)
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)
    except OSError as e:
        raise UsageError(f"{path}: cannot write: {e.strerror or e}") from None


def _write_output(path: str, write) -> None:
    """``write(path)`` for a command's main output; a file system error becomes a :class:`UsageError`."""
    try:
        write(path)
    except OSError as e:
        raise UsageError(f"{path}: cannot write: {e.strerror}") from None


def _result_errors() -> tuple:
    from analyzer.ci.compare import ResultError
    from analyzer.cube import CubeError

    return ResultError, CubeError


# --------------------------------------------------------------------------
# expert-diff
# --------------------------------------------------------------------------
def _diff_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("base", help="the reference result")
    ap.add_argument("new", help="the result to compare with it")
    ap.add_argument("-o", "--output", metavar="DIFF.cubex", help="write new - base as a cube (needs cube inputs)")
    ap.add_argument("--json", metavar="FILE", help="write the differences as JSON ('-' for stdout)")
    ap.add_argument("--floor", default="0", metavar="QUANTITY",
                    help="ignore changes not larger than this (a number in the metrics' own units, e.g. 0.001)")
    ap.add_argument("--top", type=int, default=10, help="call paths / locations shown per changed metric")
    ap.add_argument("--all", action="store_true", help="list unchanged metrics too")


def _diff(a) -> int:
    """Changes between two analysis results (.cubex from expert-analyze or Scalasca, or expert-analyze JSON
    summaries): per metric, and for changed metrics per call path and location."""
    from analyzer.ci import compare
    from analyzer.ci.check import parse_quantity
    from analyzer.cube import write_cubex

    fq = parse_quantity(a.floor)
    if fq.kind in ("percent", "sd"):
        raise UsageError(f"--floor {a.floor!r}: must be an absolute amount")
    d = compare.diff(a.base, a.new, floor=fq.value)
    if a.output:
        cube = compare.diff_cube(d.base, d.new)
        _write_output(a.output, lambda path: write_cubex(cube, path))
    if a.json:
        text = json.dumps(d.to_dict(), indent=1)
        if a.json == "-":
            print(text)
        else:
            _write(a.json, text)
    if a.json != "-":
        print(compare.format_diff(d, top=a.top, all_metrics=a.all))
        if a.output:
            print(f"\ndifference cube written to {a.output}")
    return 0


# --------------------------------------------------------------------------
# expert-check
# --------------------------------------------------------------------------
def _check_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("new", help="result of the run to check (.cubex or JSON summary)")
    ap.add_argument("--baseline", "-b", action="append", nargs="+", default=[], metavar="BASE",
                    help="baseline result(s); several runs give a mean and a spread (repeatable)")
    ap.add_argument("--max-increase", action="append", default=[], metavar="METRIC=LIMIT",
                    help="LIMIT: 10%% of the baseline mean, 2sd, or an amount such as 0.5s; "
                    "comma-separated parts allow the most lenient")
    ap.add_argument("--max-value", action="append", default=[], metavar="METRIC=AMOUNT",
                    help="upper bound on the metric's total in the new run")
    ap.add_argument("--max-decrease", action="append", default=[], metavar="METRIC=LIMIT",
                    help="like --max-increase, for values that must not fall, such as the POP efficiencies "
                    "(parallel_efficiency, load_balance, communication_efficiency, serialisation_efficiency, "
                    "transfer_efficiency)")
    ap.add_argument("--min-value", action="append", default=[], metavar="METRIC=AMOUNT",
                    help="lower bound on the new run's total, e.g. parallel_efficiency=0.8")
    ap.add_argument("--abs-floor", action="append", default=[], metavar="[METRIC=]AMOUNT",
                    help="increases not larger than this never fail (e.g. 1ms)")
    ap.add_argument("--per-callpath", action="store_true",
                    help="hold every call path to the thresholds too, not only the metric's total")
    ap.add_argument("--junit", metavar="FILE", help="write a JUnit XML report")
    ap.add_argument("--markdown", metavar="FILE", help="write a Markdown summary (e.g. $GITHUB_STEP_SUMMARY)")
    ap.add_argument("-q", "--quiet", action="store_true", help="print failures only")


def _check(a) -> int:
    """Gate a run on stored baselines. Exit 0: all checks pass; 1: a regression; 2: bad input."""
    from analyzer.ci import check as chk

    baselines = [b for group in a.baseline for b in group]
    thresholds = [chk.parse_threshold("increase", t) for t in a.max_increase]
    thresholds += [chk.parse_threshold("value", t) for t in a.max_value]
    thresholds += [chk.parse_threshold("decrease", t) for t in a.max_decrease]
    thresholds += [chk.parse_threshold("min", t) for t in a.min_value]
    floors = [chk.parse_floor(f) for f in a.abs_floor]
    if not thresholds:
        raise UsageError("no thresholds given (use --max-increase, --max-value, --max-decrease or --min-value)")
    rep = chk.check(a.new, baselines, thresholds, floors, per_callpath=a.per_callpath)
    for w in rep.warnings:
        print(f"expert-check: warning: {w}", file=sys.stderr)
    text = chk.format_text(rep)
    if a.quiet:
        text = "\n".join(l for l in text.splitlines() if not l.startswith("PASS  "))
    print(text)
    if a.junit:
        _write(a.junit, chk.format_junit(rep))
    if a.markdown:
        _write(a.markdown, chk.format_markdown(rep))
    return rep.exit_code


def _check_could_not_run(a, message: str) -> None:
    """A bad input is still a CI result: an errored JUnit test case and a Markdown note."""
    from analyzer.ci import check as chk

    if a.junit:
        _write(a.junit, chk.junit_error(message))
    if a.markdown:
        _write(a.markdown, f"### expert-check: ⚠️ could not run\n\n{message}\n")


# --------------------------------------------------------------------------
# expert-report
# --------------------------------------------------------------------------
def _report_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("result", help=".cubex (ours or Scalasca's) or a trace (.elg, analyzed first)")
    ap.add_argument("-o", "--output", default=None, help="HTML file to write (default: RESULT with .html)")
    ap.add_argument("--title", default=None)


def _report(a) -> int:
    """Write one self-contained HTML file with the three coupled trees (properties, call tree, locations) of an
    analysis result; it opens offline in any browser."""
    from analyzer.report import html as report_html

    out = a.output or os.path.splitext(a.result)[0] + ".html"
    cube = report_html.load_cube(a.result)
    html = report_html.render(cube, title=a.title or os.path.basename(a.result))
    _write_output(out, lambda path: _write(path, html))
    print(f"report written to {out}")
    return 0


def _report_errors() -> tuple:
    from analyzer.cube import CubeError
    from analyzer.report.html import ReportError

    return ReportError, CubeError


# --------------------------------------------------------------------------
# expert-profile
# --------------------------------------------------------------------------
def _profile_arguments(ap: argparse.ArgumentParser) -> None:
    ap.add_argument("trace", help="trace file (.elg)")
    ap.add_argument("--volume", choices=("naive", "minimal"), default="naive",
                    help="accounting of collective data volume (ompP's Fig. 4 settings)")
    ap.add_argument("--region", action="append", default=[], metavar="NAME",
                    help="only these regions in the region profile (repeatable)")
    ap.add_argument("--charts", metavar="DIR", help="write overhead pies per process and radar charts as PNG here")
    ap.add_argument("--json", metavar="FILE", help="write the profile as JSON")
    ap.add_argument("--salvage", action="store_true",
                    help="profile what survives of a damaged or incomplete trace (as expert-analyze --salvage)")


def _profile(a) -> int:
    """ompP-style profile of a trace: per region and thread execT, execC, bodyT, enterT, exitT and MPI columns;
    the overhead analysis per parallel region; optional PNG charts."""
    from tracefmt import TraceFormatError
    from tracefmt.detect import open_any

    from analyzer.analyze import damage_note
    from analyzer.profile import ompp as prof

    trace = open_any(a.trace)
    if trace.problems and not a.salvage:  # the same answer as expert-trace check and expert-analyze
        raise TraceFormatError(damage_note(list(trace.problems)), path=a.trace)
    p = prof.profile_trace(trace, volume=a.volume)
    print(prof.format_profile(p, regions=a.region or None))
    if a.json:
        _write(a.json, json.dumps(p.to_dict(), indent=1))
    if a.charts:
        try:
            files = prof.write_charts(p, a.charts)
        except OSError as e:
            raise UsageError(f"{a.charts}: cannot write the charts: {e.strerror or e}") from None
        print("\ncharts: " + ", ".join(files))
    return 0


def _profile_errors() -> tuple:
    from tracefmt import TraceFormatError

    from analyzer.profile.ompp import ProfileError

    return ProfileError, TraceFormatError  # a damaged block is found when its location is decoded


# --------------------------------------------------------------------------
# The entry points (pyproject.toml, [project.scripts])
# --------------------------------------------------------------------------
diff_main = _command("expert-diff", _diff_arguments, _diff, _result_errors)
check_main = _command("expert-check", _check_arguments, _check, _result_errors, on_error=_check_could_not_run,
                      epilog="Examples: --max-increase mpi_latesender=10%  --max-increase time=5%,2sd  "
                      "--max-value omp_lock_contention_critical=0.5s  --abs-floor 1ms")
report_main = _command("expert-report", _report_arguments, _report, _report_errors)
profile_main = _command("expert-profile", _profile_arguments, _profile, _profile_errors)


if __name__ == "__main__":  # pragma: no cover
    sys.exit(diff_main())
