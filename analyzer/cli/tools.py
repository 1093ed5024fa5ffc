"""Command-line entry points: expert-diff, expert-check, expert-report, expert-profile.

Every command exits 2 with a one-line ``<prog>: error: ...`` message on bad
input (missing or unreadable file, unknown metric, malformed threshold),
never with a traceback.
"""

from __future__ import annotations

import argparse
import functools
import json
import os
import sys

from analyzer.ci.compare import ResultError


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


def _fail(prog: str, message: str) -> int:
    print(f"{prog}: error: {message}", file=sys.stderr)
    return 2


def _write(path: str, text: str) -> None:
    d = os.path.dirname(os.path.abspath(path))
    os.makedirs(d, exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        f.write(text)


# --------------------------------------------------------------------------
@quiet_on_closed_pipe
def diff_main(argv=None) -> int:
    from analyzer.ci import compare
    from analyzer.cube import write_cubex

    ap = argparse.ArgumentParser(
        prog="expert-diff",
        description="Changes between two analysis results (.cubex from expert-analyze or Scalasca, or "
        "expert-analyze JSON summaries): per metric, and for changed metrics per call path and location.",
    )
    ap.add_argument("base", help="the reference result")
    ap.add_argument("new", help="the result to compare with it")
    ap.add_argument("-o", "--output", metavar="DIFF.cubex", help="write new - base as a cube (needs cube inputs)")
    ap.add_argument("--json", metavar="FILE", help="write the differences as JSON ('-' for stdout)")
    ap.add_argument("--floor", default="0", metavar="QUANTITY",
                    help="ignore changes not larger than this (a number in the metrics' own units, e.g. 0.001)")
    ap.add_argument("--top", type=int, default=10, help="call paths / locations shown per changed metric")
    ap.add_argument("--all", action="store_true", help="list unchanged metrics too")
    a = ap.parse_args(argv)
    try:
        from analyzer.ci.check import parse_quantity

        fq = parse_quantity(a.floor)
        if fq.kind in ("percent", "sd"):
            raise ResultError(f"--floor {a.floor!r}: must be an absolute amount")
        d = compare.diff(a.base, a.new, floor=fq.value)
        if a.output:
            cube = compare.diff_cube(d.base, d.new)
            try:
                write_cubex(cube, a.output)
            except OSError as e:
                raise ResultError(f"{a.output}: cannot write: {e.strerror}") from None
    except ResultError as e:
        return _fail(ap.prog, str(e))
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
@quiet_on_closed_pipe
def check_main(argv=None) -> int:
    from analyzer.ci import check as chk

    ap = argparse.ArgumentParser(
        prog="expert-check",
        description="Gate a run on stored baselines. Exit 0: all checks pass; 1: a regression; 2: bad input.",
        epilog="Examples: --max-increase mpi_latesender=10%  --max-increase time=5%,2sd  "
        "--max-value omp_lock_contention_critical=0.5s  --abs-floor 1ms",
    )
    ap.add_argument("new", help="result of the run to check (.cubex or JSON summary)")
    ap.add_argument("--baseline", "-b", action="append", nargs="+", default=[], metavar="BASE",
                    help="baseline result(s); several runs give a mean and a spread (repeatable)")
    ap.add_argument("--max-increase", action="append", default=[], metavar="METRIC=LIMIT",
                    help="LIMIT: 10%% of the baseline mean, 2sd, or an amount such as 0.5s; "
                    "comma-separated parts allow the most lenient")
    ap.add_argument("--max-value", action="append", default=[], metavar="METRIC=AMOUNT",
                    help="upper bound on the metric's total in the new run")
    ap.add_argument("--abs-floor", action="append", default=[], metavar="[METRIC=]AMOUNT",
                    help="increases not larger than this never fail (e.g. 1ms)")
    ap.add_argument("--per-callpath", action="store_true",
                    help="hold every call path to the thresholds too, not only the metric's total")
    ap.add_argument("--junit", metavar="FILE", help="write a JUnit XML report")
    ap.add_argument("--markdown", metavar="FILE", help="write a Markdown summary (e.g. $GITHUB_STEP_SUMMARY)")
    ap.add_argument("-q", "--quiet", action="store_true", help="print failures only")
    a = ap.parse_args(argv)
    baselines = [b for group in a.baseline for b in group]
    try:
        thresholds = [chk.parse_threshold("increase", t) for t in a.max_increase]
        thresholds += [chk.parse_threshold("value", t) for t in a.max_value]
        floors = [chk.parse_floor(f) for f in a.abs_floor]
        if not thresholds:
            raise ResultError("no thresholds given (use --max-increase and/or --max-value)")
        rep = chk.check(a.new, baselines, thresholds, floors, per_callpath=a.per_callpath)
    except ResultError as e:
        if a.junit:
            _write(a.junit, chk.junit_error(str(e)))
        if a.markdown:
            _write(a.markdown, f"### expert-check: ⚠️ could not run\n\n{e}\n")
        return _fail(ap.prog, str(e))
    text = chk.format_text(rep)
    if a.quiet:
        text = "\n".join(l for l in text.splitlines() if not l.startswith("PASS  "))
    print(text)
    if a.junit:
        _write(a.junit, chk.format_junit(rep))
    if a.markdown:
        _write(a.markdown, chk.format_markdown(rep))
    return rep.exit_code


# --------------------------------------------------------------------------
@quiet_on_closed_pipe
def report_main(argv=None) -> int:
    from analyzer.cube import CubeError
    from analyzer.report import html as report_html
    from analyzer.report.html import ReportError

    ap = argparse.ArgumentParser(
        prog="expert-report",
        description="Write one self-contained HTML file with the three coupled trees (properties, call tree, "
        "locations) of an analysis result; it opens offline in any browser.",
    )
    ap.add_argument("result", help=".cubex (ours or Scalasca's) or a trace (.elg, analyzed first)")
    ap.add_argument("-o", "--output", default=None, help="HTML file to write (default: RESULT with .html)")
    ap.add_argument("--title", default=None)
    a = ap.parse_args(argv)
    out = a.output or os.path.splitext(a.result)[0] + ".html"
    try:
        cube = report_html.load_cube(a.result)
        html = report_html.render(cube, title=a.title or os.path.basename(a.result))
        try:
            _write(out, html)
        except OSError as e:
            raise ResultError(f"{out}: cannot write: {e.strerror}") from None
    except (ResultError, ReportError, CubeError) as e:
        return _fail(ap.prog, str(e))
    print(f"report written to {out}")
    return 0


# --------------------------------------------------------------------------
@quiet_on_closed_pipe
def profile_main(argv=None) -> int:
    from analyzer.profile import ompp as prof
    from analyzer.profile.ompp import ProfileError

    ap = argparse.ArgumentParser(
        prog="expert-profile",
        description="ompP-style profile of a trace: per region and thread execT, execC, bodyT, enterT, exitT "
        "and MPI columns; the overhead analysis per parallel region; optional PNG charts.",
    )
    ap.add_argument("trace", help="trace file (.elg)")
    ap.add_argument("--volume", choices=("naive", "minimal"), default="naive",
                    help="accounting of collective data volume (ompP's Fig. 4 settings)")
    ap.add_argument("--region", action="append", default=[], metavar="NAME",
                    help="only these regions in the region profile (repeatable)")
    ap.add_argument("--charts", metavar="DIR", help="write overhead pies per process and radar charts as PNG here")
    ap.add_argument("--json", metavar="FILE", help="write the profile as JSON")
    a = ap.parse_args(argv)
    try:
        p = prof.profile_trace(a.trace, volume=a.volume)
        print(prof.format_profile(p, regions=a.region or None))
        if a.json:
            _write(a.json, json.dumps(p.to_dict(), indent=1))
        if a.charts:
            files = prof.write_charts(p, a.charts)
            print("\ncharts: " + ", ".join(files))
    except ProfileError as e:
        return _fail(ap.prog, str(e))
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(diff_main())
