"""What fresh memory costs here: 2 MiB pages against 4 KiB pages, memory freed a moment ago or a while ago.

    python -m benchmarks fresh_pages [--mb 400] [--repeat 3] [--gap 5]

Each measurement is a new process that allocates one NumPy array of ``--mb`` MiB and writes it once; the
table gives that step's CPU time (user + system, most of it the kernel's page faults).  NumPy asks for
transparent huge pages (``madvise``) or not (``NUMPY_MADVISE_HUGEPAGE``).  "just freed": right after another
process freed as much memory; "after G s": after G seconds of sleep, by when a guest that reports free pages
(``tracefmt.pages``) has handed them back to its host.  This is what ``EXPERT_HUGE_PAGES=auto`` decides on.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import time

_CHILD = """
import resource, sys, numpy as np
def cpu():
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime, r.ru_stime
n = int(sys.argv[1]) << 20
a = cpu()
x = np.empty(n // 8)
x[:] = 1.0
b = cpu()
print(b[0] - a[0], b[1] - a[1])
"""


def _touch(mb: int, huge: bool) -> tuple[float, float]:
    env = dict(os.environ, NUMPY_MADVISE_HUGEPAGE="1" if huge else "0")
    out = subprocess.run([sys.executable, "-c", _CHILD, str(mb)], env=env, capture_output=True, text=True,
                         check=True).stdout.split()
    return float(out[0]), float(out[1])


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(prog="python -m benchmarks fresh_pages", description=__doc__.split("\n")[0])
    ap.add_argument("--mb", type=int, default=400, help="MiB allocated and written per measurement")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--gap", type=float, default=5.0, help="seconds of sleep before the 'after' measurements")
    args = ap.parse_args(argv)
    from tracefmt.pages import huge_pages_pay, reports_free_pages

    print(f"free page reporting to a host: {'yes' if reports_free_pages() else 'no'}; "
          f"huge pages for analyses (EXPERT_HUGE_PAGES={os.environ.get('EXPERT_HUGE_PAGES', 'auto')}): "
          f"{'yes' if huge_pages_pay() else 'no'}; load average {os.getloadavg()[0]:.1f}")
    rows = {}
    for _ in range(args.repeat):  # the variants take turns, so a change of load hits each alike
        for huge in (True, False):
            for fresh in (False, True):
                if fresh:
                    time.sleep(args.gap)
                else:
                    _touch(args.mb, huge)  # another process uses and frees the memory just before
                rows.setdefault((huge, fresh), []).append(_touch(args.mb, huge))
    print(f"| pages | memory | cpu s (min / median / max of {args.repeat}) | of it system s (median) | "
          f"ms per 2 MiB (median) |")
    print("|---|---|---:|---:|---:|")
    for (huge, fresh), runs in rows.items():
        cpu = sorted(r[0] for r in runs)
        sys_s = statistics.median(r[1] for r in runs)
        med = statistics.median(cpu)
        print(f"| {'2 MiB' if huge else '4 KiB'} | {f'after {args.gap:g} s' if fresh else 'just freed'} | "
              f"{cpu[0]:.3f} / {med:.3f} / {cpu[-1]:.3f} | {sys_s:.3f} | {1000 * med / (args.mb / 2):.2f} |")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
