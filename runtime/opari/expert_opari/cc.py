"""expert-cc: compile and link an OpenMP (or hybrid MPI/OpenMP) C/C++ or Fortran program with POMP instrumentation.

    expert-cc [COMPILER] [--expert-OPTION ...] COMPILER-ARGUMENTS...

    expert-cc -fopenmp -O2 -o app app.c            # gcc (g++ when a source is C++)
    expert-cc mpicc -fopenmp -o app app.c util.c    # any compiler or MPI wrapper as the first word
    expert-cc gfortran -fopenmp -o app app.f90      # Fortran (.f90/.F90/...; gfortran by default)
    expert-cc mpif90 -fopenmp -c bt.f               # fixed form too (.f/.F/.for/.ftn)

Each C/C++ source is instrumented with expert-instrument into a temporary directory and compiled
from there (``-iquote`` keeps its own directory first for ``#include "..."``; ``#line`` keeps file
names and line numbers those of the original).  When linking, the program is linked against the
POMP-enabled runtime library with an rpath, so running it writes a trace (``EXPERT_TRACE_FILE`` or
``<program>.elg``) without expert-run.  The MPI flavour of the library (Open MPI or MPICH) is taken
from the compiler wrapper.

expert-cc's own options (all start with --expert-):
  --expert-mpi=auto|ompi|mpich|none   runtime library flavour (default auto: ask the wrapper)
  --expert-disable=LIST                constructs to leave uninstrumented (see expert-instrument --help)
  --expert-keep=DIR                    keep the instrumented sources in DIR
  --expert-verbose                     print the commands run
Only the standard library is used, so the tool runs with any python3.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import tempfile

from .cli import instrument_file
from .descriptors import table_path
from .directives import InstrumentError
from .fortran import FORTRAN_EXT

RUNTIME = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # runtime/
INCLUDE_DIR = os.path.join(RUNTIME, "include")
LIB_DIR = os.environ.get("EXPERT_RUNTIME_LIB") or os.path.join(RUNTIME, "lib")

C_EXT = {".c"}
CXX_EXT = {".cc", ".cpp", ".cxx", ".c++", ".C", ".cp", ".CPP"}
# compiler options whose value is the next argument
VALUE_OPTS = {"-o", "-I", "-L", "-D", "-U", "-include", "-imacros", "-isystem", "-iquote", "-idirafter", "-MF",
              "-MT", "-MQ", "-Xlinker", "-Xpreprocessor", "-Xassembler", "-T", "-u", "-aux-info", "--param",
              "-isysroot", "-imultilib", "-iprefix", "-iwithprefix", "-iwithprefixbefore", "-z"}
# arguments that only matter when linking (left out of the per-source compile commands)
LINK_PREFIXES = ("-l", "-L", "-Wl,", "-static-")
LINK_FLAGS = {"-rdynamic", "-shared", "-static", "-pie", "-no-pie", "-nostdlib", "-nodefaultlibs", "-nostartfiles",
              "-s"}
LINK_VALUE_OPTS = {"-L", "-Xlinker", "-T", "-u", "-z"}
OBJ_EXT = (".o", ".a", ".so", ".lo", ".obj")


class CcError(Exception):
    pass


def _is_source(arg: str) -> bool:
    return os.path.splitext(arg)[1] in C_EXT | CXX_EXT | FORTRAN_EXT


def _is_fortran(arg: str) -> bool:
    return os.path.splitext(arg)[1] in FORTRAN_EXT


def split_command(argv: list[str]):
    """(compiler or None, expert options, compiler arguments)."""
    opts, rest = {}, []
    for a in argv:
        if a.startswith("--expert-"):
            key, _, val = a[len("--expert-"):].partition("=")
            opts[key] = val
        else:
            rest.append(a)
    compiler = None
    if rest and not rest[0].startswith("-") and not _is_source(rest[0]) and not rest[0].endswith(OBJ_EXT):
        compiler = rest.pop(0)
    return compiler, opts, rest


def mpi_flavour(compiler: str, verbose=False) -> str:
    """ompi, mpich or none, from what the compiler (wrapper) says it adds."""
    for probe in ("--showme", "-show"):
        try:
            p = subprocess.run([compiler, probe], capture_output=True, text=True, timeout=30)
        except (OSError, subprocess.TimeoutExpired):
            return "none"
        out = p.stdout + p.stderr
        if p.returncode != 0:
            continue
        if "mpich" in out or "-lmpich" in out:
            return "mpich"
        if "openmpi" in out or "-lmpi" in out.split() or "-lmpi " in out:
            return "ompi"
    return "none"


def classify(args: list[str]):
    """Walk the compiler arguments: (sources with their index, -o value, mode flags)."""
    sources, out, mode = [], None, "link"
    i = 0
    while i < len(args):
        a = args[i]
        if a in VALUE_OPTS:
            if i + 1 >= len(args):
                raise CcError(f"option {a} needs a value")
            if a == "-o":
                out = args[i + 1]
            i += 2
            continue
        if a in ("-c", "-S", "-E"):
            mode = {"-c": "compile", "-S": "assemble", "-E": "preprocess"}[a] if mode == "link" else mode
        elif a == "-x" or (a.startswith("-x") and len(a) > 2):
            raise CcError("-x (explicit source language) is not supported; name sources by their extension")
        elif not a.startswith("-") and _is_source(a):
            sources.append((i, a))
        i += 1
    return sources, out, mode


def fixed_line_length(args: list[str]) -> int:
    """The column where fixed-form statements end: 72, or gfortran's -ffixed-line-length-N|none (the last one)."""
    width = 72
    for a in args:
        if a.startswith("-ffixed-line-length-"):
            val = a[len("-ffixed-line-length-"):]
            if val == "none" or val == "0":
                width = 1 << 20
            elif val.isdigit():
                width = int(val)
    return width


def run(cmd, verbose):
    if verbose:
        print("expert-cc: " + shlex.join(cmd), file=sys.stderr)
    try:
        return subprocess.run(cmd).returncode
    except OSError as exc:
        raise CcError(f"cannot run {cmd[0]}: {exc.strerror}") from None


def build(argv: list[str]) -> int:
    compiler, opts, args = split_command(argv)
    verbose = "verbose" in opts
    sources, out, mode = classify(args)
    if compiler is None:
        if any(_is_fortran(s) for _, s in sources):
            compiler = "gfortran"
        else:
            compiler = "g++" if any(os.path.splitext(s)[1] in CXX_EXT for _, s in sources) else "gcc"
    if shutil.which(compiler) is None:
        raise CcError(f"compiler not found: {compiler}")
    if not sources:  # nothing to instrument (e.g. a link step of objects): still link the runtime
        return run([compiler] + args + link_args(compiler, opts, verbose) if mode == "link" else [compiler] + args,
                   verbose)
    disabled = [c for c in opts.get("disable", "").split(",") if c]
    keep = opts.get("keep")
    tmp = tempfile.mkdtemp(prefix="expert-cc-")
    try:
        work = keep or tmp
        os.makedirs(work, exist_ok=True)
        instrumented = {}
        width = fixed_line_length(args)
        for k, (i, src) in enumerate(sources):
            if not os.path.isfile(src):
                raise CcError(f"{src}: no such file")
            stem, ext = os.path.splitext(os.path.basename(src))
            dst = os.path.join(work, f"{stem}.{k}.pomp{ext}" if len(sources) > 1 else f"{stem}.pomp{ext}")
            instrument_file(src, dst, disabled, line_path=src, fixed_width=width)
            instrumented[i] = dst
        src_idx = {i for i, _ in sources}
        # compile flags: everything but sources, -o and link-only arguments
        cflags, j = [], 0
        while j < len(args):
            a = args[j]
            if a in VALUE_OPTS:
                if a != "-o" and a not in LINK_VALUE_OPTS:
                    cflags += [a, args[j + 1]]
                j += 2
                continue
            if (j in src_idx or a.startswith(LINK_PREFIXES) or a in LINK_FLAGS or a.endswith(OBJ_EXT)
                    or a in ("-c", "-S", "-E")):
                j += 1
                continue
            cflags.append(a)
            j += 1
        if mode != "link" and out and len(sources) > 1:
            raise CcError("cannot specify -o with -c, -S or -E and several source files")
        objs = {}
        for i, src in sources:
            stem = os.path.splitext(os.path.basename(src))[0]
            flag = {"link": "-c", "compile": "-c", "assemble": "-S", "preprocess": "-E"}[mode]
            if mode == "link":
                target = os.path.join(tmp, f"{stem}.{i}.o")
            elif out:
                target = out
            else:
                target = None if mode == "preprocess" else f"{stem}.{'o' if mode == 'compile' else 's'}"
            src_dir = os.path.dirname(os.path.abspath(src))
            fortran = _is_fortran(src) and flag == "-c"
            # Fortran: -I for INCLUDE lines and modules; the object then gets the descriptor table linked in
            own_dir = ["-I", src_dir] if _is_fortran(src) else ["-iquote", src_dir]
            cmd = [compiler] + cflags + own_dir + ["-I", INCLUDE_DIR, flag, instrumented[i]]
            code_obj = os.path.join(tmp, f"{stem}.{i}.code.o") if fortran else target
            if code_obj:
                cmd += ["-o", code_obj]
            rc = run(cmd, verbose)
            if rc != 0:
                return rc
            if fortran:
                rc = add_fortran_table(table_path(instrumented[i]), code_obj, target, tmp, i, verbose)
                if rc != 0:
                    return rc
            objs[i] = target
        if mode != "link":
            return 0
        link = [objs.get(j, a) for j, a in enumerate(args)]
        return run([compiler] + link + link_args(compiler, opts, verbose), verbose)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)


def add_fortran_table(table: str, code_obj: str, target: str, tmp: str, i: int, verbose: bool) -> int:
    """Compile the descriptor table of an instrumented Fortran source and merge it into its object file
    (ld -r), so that the object carries its descriptors wherever it is linked."""
    table_obj = os.path.join(tmp, f"table.{i}.o")
    cc = os.environ.get("EXPERT_TABLE_CC", "gcc")
    rc = run([cc, "-c", "-O1", "-fPIC", "-I", INCLUDE_DIR, table, "-o", table_obj], verbose)
    if rc != 0:
        return rc
    return run(["ld", "-r", code_obj, table_obj, "-o", target], verbose)


def link_args(compiler: str, opts: dict, verbose: bool) -> list[str]:
    flavour = opts.get("mpi") or "auto"
    if flavour == "auto":
        flavour = mpi_flavour(compiler, verbose)
    lib = {"ompi": "expert-ompi", "mpich": "expert-mpich", "none": "expert"}.get(flavour)
    if lib is None:
        raise CcError(f"--expert-mpi must be auto, ompi, mpich or none (got {flavour})")
    path = os.path.join(LIB_DIR, f"lib{lib}.so")
    if not os.path.isfile(path):
        raise CcError(f"runtime library {path} is missing: build it with 'make -C runtime' (or ./dev setup)")
    return ["-L", LIB_DIR, f"-l{lib}", f"-Wl,-rpath,{LIB_DIR}"]


def main(argv=None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if not argv or argv[0] in ("-h", "--help", "--expert-help"):
        print(__doc__.split("Only the standard")[0].rstrip())
        return 0 if argv else 2
    try:
        return build(argv)
    except InstrumentError as exc:
        print(f"expert-cc: {exc}", file=sys.stderr)
        return 1
    except CcError as exc:
        print(f"expert-cc: {exc}", file=sys.stderr)
        return 2
