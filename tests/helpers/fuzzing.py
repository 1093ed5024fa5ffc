"""Fuzzing every reader and command (issue 18, item 7): mutants of one small file per input kind, run through
every command that takes that kind, in a worker process that keeps the packages imported.

An outcome per (mutant, command) is one of

* ``ok``: exit 0 or 1 (``check`` found problems), no traceback;
* ``clean``: exit 2 with our one error line (the file refused), no traceback;
* ``traceback``: a Python traceback in the output, an exception out of the command, exit 3 (internal error);
* ``hang``: the command ran past the time-out (a SIGALRM in the worker, or the parent kills the worker);
* ``overrun``: the command's peak RSS (VmHWM, reset before each run) passed twice the peak of the
  unmutated file through the same command, or the worker's address-space limit was hit (MemoryError).

``tests/fuzz/test_fuzz.py`` runs a few mutants per kind; ``python -m benchmarks fuzz --mutants N`` a campaign.
Mutations: bit flips, truncation, a huge count (u32/u64 extremes planted at a random offset), a duplicated
chunk, bytes spliced in from elsewhere in the file, a zeroed range; gzip'ed files are mutated inside the
stream and recompressed most of the time.  A directory (EPIK, OTF2) gets one of its files mutated.
"""

from __future__ import annotations

import gzip
import json
import os
import random
import re
import resource
import select
import shutil
import signal
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]

TRACE_COMMANDS = ("expert-analyze", "trace check", "trace info", "trace dump", "trace convert", "expert-profile")
RESULT_COMMANDS = ("expert-report", "expert-diff", "expert-check")
#: input kind -> the commands that take it
KINDS = {
    "elg": TRACE_COMMANDS,
    "epilog": TRACE_COMMANDS,
    "epik": TRACE_COMMANDS,
    "otf2": TRACE_COMMANDS,
    "cubex": RESULT_COMMANDS,
    "cubez": RESULT_COMMANDS,  # our .cubex with its data members compressed, as Scalasca's writer stores them
    "cube3": RESULT_COMMANDS,
    "json": RESULT_COMMANDS,
}
OUTCOMES = ("ok", "clean", "traceback", "hang", "overrun")
HUGE = (0xFFFFFFFF, 0x80000000, 0x7FFFFFFF, 10**8, 66, 0, 0xFFFFFFFFFFFFFFFF, 1 << 40)


# ------------------------------------------------------------------------------------------------- seeds
def make_seed(kind: str, where: Path) -> Path:
    """The unmutated input of ``kind`` under ``where``: a file, or a directory for EPIK and OTF2."""
    where.mkdir(parents=True, exist_ok=True)
    if kind == "elg":
        from hostile import small_builder
        from tracefmt.writer import to_bytes

        b = small_builder()
        d = b.definitions()
        path = where / "seed.elg"
        path.write_bytes(to_bytes(d, {loc: b.records(loc) for loc in sorted(d.locations)}))
        return path
    if kind == "epilog":
        from epilog_samples import merged_mpi

        return Path(merged_mpi(where / "seed.elg", compress=True))
    if kind == "epik":
        from epilog_samples import epik_hybrid

        epik_hybrid(str(where / "epik_seed"), compress=True)
        return where / "epik_seed"
    if kind == "otf2":
        from otf2_bytes import write_archive

        return write_archive(where / "otf2_seed", iterations=3).parent
    if kind == "cube3":
        from repo_paths import shared

        path = where / "seed.cube"
        shutil.copyfile(shared("fixtures", "cube", "cubelib__test0.0_cube3.cube"), path)
        return path
    from analyzer.analyze import analyze
    from analyzer.cube import write_cubex, write_json
    import tracefmt

    cube = analyze(tracefmt.open(make_seed("elg", where)))
    if kind == "cubez":
        from hostile_cubes import compressed_cubex

        compressed_cubex(cube, where / "seed.cubex")
        return where / "seed.cubex"
    path = where / ("seed.cubex" if kind == "cubex" else "seed.json")
    (write_cubex if kind == "cubex" else write_json)(cube, path)
    return path


# ------------------------------------------------------------------------------------------------- mutants
NUMBERS = re.compile(rb"-?[0-9]+(?:\.[0-9]+)?(?:[eE][-+]?[0-9]+)?")
ODD_NUMBERS = (b"4294967295", b"2147483648", b"-1", b"100000000", b"1e308", b"1e400", b"nan", b"-0", b"0",
               b"9" * 400, b"18446744073709551616", b"3.5")


def mutate_bytes(rng: random.Random, data: bytes) -> bytes:
    b = bytearray(data)
    if not b:
        return bytes([rng.randrange(256)])
    if data.lstrip()[:1] in (b"<", b"{", b"[") and rng.random() < 0.5:  # XML, JSON: a number changed
        found = [m.span() for m in NUMBERS.finditer(data)]
        if found:
            i, j = rng.choice(found)
            return data[:i] + rng.choice(ODD_NUMBERS) + data[j:]
    k = rng.random()
    if k < 0.25:  # bit flips
        for _ in range(rng.randint(1, 4)):
            i = rng.randrange(len(b))
            b[i] ^= 1 << rng.randrange(8)
    elif k < 0.4:  # truncation
        del b[rng.randrange(len(b)):]
    elif k < 0.65:  # a huge count
        i = rng.randrange(len(b))
        v = rng.choice(HUGE)
        fmt = rng.choice("<>") + ("Q" if v > 0xFFFFFFFF or rng.random() < 0.3 else "I")
        b[i : i + struct.calcsize(fmt)] = struct.pack(fmt, v)
    elif k < 0.8:  # a duplicated chunk (a record, a block)
        i = rng.randrange(len(b))
        n = rng.randint(1, min(4096, len(b) - i))
        b[i:i] = b[i : i + n]
    elif k < 0.92:  # bytes spliced in from elsewhere
        i, j = rng.randrange(len(b)), rng.randrange(len(b))
        n = rng.randint(1, 256)
        b[i : i + n] = b[j : j + n]
    else:  # a zeroed range
        i = rng.randrange(len(b))
        n = rng.randint(1, 64)
        b[i : i + n] = bytes(min(n, len(b) - i))
    return bytes(b)


def mutate_file(rng: random.Random, path: Path) -> None:
    data = path.read_bytes()
    if data[:2] == b"\x1f\x8b" and rng.random() < 0.8:  # inside the stream, recompressed
        try:
            inner = gzip.decompress(data)
        except (OSError, EOFError):
            inner = None
        if inner is not None:
            path.write_bytes(gzip.compress(mutate_bytes(rng, inner), 6, mtime=0))
            return
    path.write_bytes(mutate_bytes(rng, data))


def structured_elg(rng: random.Random) -> bytes:
    """The small ``.elg`` trace with one event field, event or definition changed and written consistently
    (valid checksums, so the mutant reaches the analysis instead of the reader's integrity checks)."""
    import numpy as np

    from hostile import KINDS as DEFINITION_KINDS, small_builder
    from tracefmt.writer import to_bytes

    b = small_builder()
    d = b.definitions()
    ev = {loc: b.records(loc).copy() for loc in sorted(d.locations)}
    if rng.random() < 0.3:
        kind = rng.choice(sorted(DEFINITION_KINDS))
        value = rng.choice([0, 1, 2, 7, 2**31, 2**32 - 1, 10**8, 1e-300, 1e300, float("nan"), -1000.0])
        try:
            DEFINITION_KINDS[kind](d, ev, value)
        except (ValueError, TypeError, OverflowError):
            pass
    else:
        for _ in range(rng.randint(1, 3)):
            loc = rng.choice(sorted(ev))
            e = ev[loc]
            i = rng.randrange(len(e))
            k = rng.random()
            if k < 0.6:
                field = rng.choice(e.dtype.names)
                info = np.iinfo(e.dtype[field])
                e[field][i] = rng.choice([0, 1, 2, 3, info.max, info.max // 2 + 1, rng.randrange(64)])
            elif k < 0.8:  # an event lost
                ev[loc] = np.delete(e, i)
            else:  # an event twice
                ev[loc] = np.insert(e, i, e[i])
    try:
        return to_bytes(d, ev)
    except Exception:  # noqa: BLE001 - the writer refuses what it cannot represent: mutate bytes instead
        return mutate_bytes(rng, to_bytes(*_small_parts()))


def _small_parts():
    from hostile import small_builder

    b = small_builder()
    d = b.definitions()
    return d, {loc: b.records(loc) for loc in sorted(d.locations)}


def make_mutant(rng: random.Random, seed: Path, dest: Path) -> Path:
    """A copy of ``seed`` at ``dest`` with one of its files mutated (``.elg``: half of them structurally)."""
    if dest.exists():
        shutil.rmtree(dest) if dest.is_dir() else dest.unlink()
    if seed.name == "seed.elg" and seed.read_bytes()[:2] != b"\x1f\x8b" and rng.random() < 0.5:
        dest.write_bytes(structured_elg(rng))
        return dest
    if seed.is_dir():
        shutil.copytree(seed, dest)
        files = sorted(p for p in dest.rglob("*") if p.is_file())
        mutate_file(rng, rng.choice(files))
    else:
        shutil.copyfile(seed, dest)
        mutate_file(rng, dest)
    return dest


def argv_of(command: str, path: Path, seed: Path, out: Path, metric: str = "time") -> tuple[str, list[str]]:
    """(entry point, arguments) of ``command`` on the input ``path``; ``seed`` is the other side of a diff/check."""
    p, s = str(path), str(seed)
    return {
        "expert-analyze": ("analyze", [p, "-q", "-o", str(out / "a.cubex")]),
        "trace check": ("trace", ["check", p]),
        "trace info": ("trace", ["info", p]),
        "trace dump": ("trace", ["dump", p]),
        "trace convert": ("trace", ["convert", "--force", p, str(out / "c_otf2")]),
        "expert-profile": ("profile", [p]),
        "expert-report": ("report", [p, "-o", str(out / "r.html")]),
        "expert-diff": ("diff", [s, p]),
        "expert-check": ("check", [p, "--baseline", s, "--max-increase", f"{metric}=10%"]),
    }[command]


# ------------------------------------------------------------------------------------------------- worker
class FuzzTimeout(BaseException):
    """Raised by SIGALRM in the worker: not an Exception, so no command's own handler swallows it."""


def _selftest(argv):
    """Commands that fail on purpose, for the harness's own test: ``raise``, ``sleep``."""
    if argv[0] == "raise":
        return 1 // 0
    time.sleep(60)


def _entry(name: str):
    if name == "selftest":
        return _selftest
    if name == "analyze":
        from analyzer.cli.analyze import main
    elif name == "trace":
        from tracefmt.cli import main
    else:
        from analyzer.cli import tools

        main = getattr(tools, f"{name}_main")
    return main


def _peak_kib() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    return 0


def _reset_peak() -> None:
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
    except OSError:  # not Linux: the peak only grows, overruns are found late but not missed
        pass


def run_one(entry: str, argv: list[str], timeout: float, capture: Path) -> dict:
    """Run one command in this process; its outcome, exit status, peak RSS (kB) and the last output line."""
    main = _entry(entry)
    sys.stdout.flush()
    sys.stderr.flush()
    saved = os.dup(1), os.dup(2)
    fd = os.open(capture, os.O_RDWR | os.O_CREAT | os.O_TRUNC, 0o600)
    os.dup2(fd, 1)
    os.dup2(fd, 2)
    _reset_peak()
    signal.setitimer(signal.ITIMER_REAL, timeout)
    rc, outcome = None, None
    try:
        rc = main(argv) or 0
    except SystemExit as e:
        rc = e.code if isinstance(e.code, int) else (0 if e.code is None else 2)
    except FuzzTimeout:
        outcome = "hang"
    except MemoryError:
        outcome = "overrun"
    except BaseException:  # noqa: BLE001 - an exception out of a command is the finding
        import traceback

        traceback.print_exc()
        outcome = "traceback"
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        sys.stdout.flush()
        sys.stderr.flush()
        os.dup2(saved[0], 1)
        os.dup2(saved[1], 2)
        os.close(saved[0])
        os.close(saved[1])
    peak = _peak_kib()
    size = os.fstat(fd).st_size
    os.lseek(fd, max(0, size - 8192), 0)
    tail = os.read(fd, 8192).decode("utf-8", "replace")
    os.close(fd)
    if outcome is None:
        if "Traceback (most recent call last)" in tail or rc == 3 or "internal error" in tail:
            outcome = "traceback"
        elif rc in (0, 1):
            outcome = "ok"
        elif rc == 2:
            outcome = "clean"
        else:
            outcome = "traceback"
    lines = [x for x in tail.splitlines() if x.strip()]
    return {"outcome": outcome, "rc": rc, "peak_kib": peak, "last": lines[-1][-300:] if lines else ""}


def _alarm(signum, frame):
    raise FuzzTimeout()


def worker(address_space_gib: float, capture: Path) -> None:
    """Read jobs (JSON lines) on stdin, answer one JSON line each on the original stdout; the commands' output
    goes to ``capture`` (the parent removes it: a worker is killed, not asked to stop)."""
    import warnings

    warnings.simplefilter("ignore")  # a command's warnings are output, not findings
    if address_space_gib:
        limit = int(address_space_gib * 2**30)
        resource.setrlimit(resource.RLIMIT_AS, (limit, limit))
    signal.signal(signal.SIGALRM, _alarm)
    out = os.fdopen(os.dup(1), "w", buffering=1)
    for line in sys.stdin:
        job = json.loads(line)
        out.write(json.dumps(run_one(job["entry"], job["argv"], job["timeout"], capture)) + "\n")


class Worker:
    """A worker process with a watchdog: a job that does not answer in time kills it (a hang) and the next
    job starts a new one."""

    def __init__(self, address_space_gib: float = 8.0, nice: int = 0):
        self.address_space_gib, self.nice = address_space_gib, nice
        self.proc = None

    def _start(self):
        env = dict(os.environ)
        env["PYTHONPATH"] = os.pathsep.join([str(ROOT), str(HERE), env.get("PYTHONPATH", "")])
        self.capture = Path(tempfile.mkdtemp(prefix="fuzzw-"))
        self.proc = subprocess.Popen(
            [sys.executable, str(Path(__file__)), "--worker", str(self.address_space_gib), str(self.capture / "out")],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, env=env,
            preexec_fn=(lambda: os.nice(self.nice)) if self.nice else None,
        )

    def run(self, command: str, path: Path, seed: Path, out: Path, timeout: float, metric: str = "time") -> dict:
        return self.ask(*argv_of(command, path, seed, out, metric), timeout)

    def ask(self, entry: str, argv: list[str], timeout: float) -> dict:
        if self.proc is None or self.proc.poll() is not None:
            self._start()
        self.proc.stdin.write(json.dumps({"entry": entry, "argv": argv, "timeout": timeout}) + "\n")
        self.proc.stdin.flush()
        ready, _, _ = select.select([self.proc.stdout], [], [], 2 * timeout + 30)
        line = self.proc.stdout.readline() if ready else ""
        if not line:  # stuck past its own alarm, or died (killed for memory, a crash in C)
            died = self.proc.poll() is not None
            self.close()
            return {"outcome": "overrun" if died else "hang", "rc": None, "peak_kib": 0,
                    "last": "worker died" if died else "no answer"}
        return json.loads(line)

    def close(self):
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.kill()
            self.proc.wait()
            self.proc.stdin.close()
            self.proc.stdout.close()
            self.proc = None
            shutil.rmtree(self.capture, ignore_errors=True)


def run_one_in_worker(worker: Worker, what: str, timeout: float) -> dict:
    """The worker's answer to a command that raises (``raise``) or sleeps (``sleep``)."""
    return worker.ask("selftest", [what], timeout)


# ------------------------------------------------------------------------------------------------- campaign
def campaign(kind: str, mutants: int, work: Path, seed_number: int = 18, timeout: float = 20.0,
             worker: Worker | None = None, findings: list | None = None, deadline: float | None = None) -> dict:
    """Run ``mutants`` mutants of ``kind`` through its commands (one command per mutant, in turn).

    Returns the counts per outcome, ``mutants`` run and ``max_rss_mib``; every traceback, hang and overrun
    is appended to ``findings`` as (kind, command, outcome, mutant kept under ``work``, last output line).
    """
    own = worker is None
    worker = worker or Worker()
    rng = random.Random(f"{seed_number}-{kind}")
    seed = make_seed(kind, work / "seed")
    out = work / "out"
    out.mkdir(exist_ok=True)
    commands = KINDS[kind]
    metric = "time"
    if kind == "cube3":
        from analyzer.cube import read_cube3

        metric = read_cube3(seed).metrics[0].name
    base = {c: worker.run(c, seed, seed, out, 5 * timeout, metric) for c in commands}  # the first compiles kernels
    for c, r in base.items():
        if r["outcome"] not in ("ok", "clean"):  # clean: the command refuses the kind (a report of a summary)
            raise RuntimeError(f"the unmutated {kind} seed gives {r} with {c}")
    counts = dict.fromkeys(OUTCOMES, 0)
    counts["mutants"] = 0
    max_rss = 0
    try:
        for i in range(mutants):
            if deadline is not None and time.monotonic() > deadline:
                break
            command = commands[i % len(commands)]
            m = make_mutant(rng, seed, work / ("mutant" + (seed.suffix if seed.is_file() else "")))
            r = worker.run(command, m, seed, out, timeout, metric)
            if r["outcome"] == "ok" or r["outcome"] == "clean":
                if r["peak_kib"] > 2 * base[command]["peak_kib"]:
                    r["outcome"] = "overrun"
                    r["last"] = f"peak {r['peak_kib'] >> 10} MiB, unmutated {base[command]['peak_kib'] >> 10} MiB"
            counts[r["outcome"]] += 1
            counts["mutants"] += 1
            max_rss = max(max_rss, r["peak_kib"])
            if r["outcome"] in ("traceback", "hang", "overrun") and findings is not None:
                keep = work / f"finding-{len(findings)}-{command.replace(' ', '_')}{m.suffix}"
                shutil.move(m, keep)
                findings.append((kind, command, r["outcome"], str(keep), r["last"]))
    finally:
        if own:
            worker.close()
    counts["max_rss_mib"] = max_rss >> 10
    counts["base_rss_mib"] = max(r["peak_kib"] for r in base.values()) >> 10
    return counts


if __name__ == "__main__" and sys.argv[1:2] == ["--worker"]:
    worker(float(sys.argv[2]), Path(sys.argv[3]))
