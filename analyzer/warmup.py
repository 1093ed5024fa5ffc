"""Fill numba's on-disk cache (``cache=True``) so the first real analysis starts warm.

Run by ``./dev setup``: analyzes and profiles the small demo trace once and
loads the trace decoder, which compiles every kernel for the argument types
real traces use.

    python -m analyzer.warmup
"""

from __future__ import annotations

import sys
import time


def warm() -> float:
    """Analyze the demo trace in memory; returns the seconds it took."""
    from .analyze import analyze
    from .demo import build_demo_trace

    from tracefmt.reader import load_decoder

    from .profile import profile_trace

    t0 = time.perf_counter()
    load_decoder()  # the trace decoder kernel (small traces like the demo's do not reach it)
    demo = build_demo_trace().build()
    analyze(demo, plugins=False)
    analyze(_counter_trace(), plugins=False)  # the hardware-counter kernel
    profile_trace(demo)  # expert-profile's kernel
    return time.perf_counter() - t0


def _counter_trace():
    import tracefmt

    b = tracefmt.TraceBuilder()
    loc = b.location(rank=0)
    b.enter(loc, 0.0, "main"); b.counter(loc, 0.0, "PAPI_TOT_CYC", 0)  # noqa: E702
    b.exit(loc, 1.0, "main"); b.counter(loc, 1.0, "PAPI_TOT_CYC", 10)  # noqa: E702
    return b.build()


def main() -> int:
    t = warm()
    print(f"[warmup] analyzer kernels compiled and cached ({t:.1f} s)", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
