"""Record what Scalasca 2.6's own EPILOG reader and SCOUT say about ``epik_bgq`` archives.

    python tests/data/epilog_bgq/record.py            # writes scout_RxT.json next to this file

For each shape the generator of ``tests/helpers/epilog_samples.py`` writes the archive, ``scout.hyb
--single-pass`` (``SCOUT_BIN``, default /work/oracle-build/bin) analyses it under ``mpirun -np RANKS``
with ``OMP_NUM_THREADS=THREADS``, and the per-location totals (summed over call paths) of the metrics
below are written as JSON, locations as ``[rank, thread]``.  ``--single-pass``: the generated
archives have no MPI_Init/MPI_Finalize, which SCOUT's critical-path and root-cause passes assume
(they stop on an assertion in SynchpointHandler.cpp); the wait states come from the forward pass.
``tests/interop/test_epilog_bgq.py`` compares our analysis of the same archives with these values.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[2]
sys.path[:0] = [str(ROOT), str(ROOT / "tests" / "helpers")]

from analyzer.cube.cubex_read import read_cubex  # noqa: E402
from epilog_samples import epik_bgq  # noqa: E402

SCOUT_BIN = Path(os.environ.get("SCOUT_BIN", "/work/oracle-build/bin"))
SHAPES = [(4, 4), (8, 6)]
METRICS = ["time", "visits", "omp_ibarrier_wait", "mpi_latesender", "mpi_barrier_wait", "syncs_coll",
           "comms_send", "comms_recv", "bytes_sent", "bytes_rcvd"]


def record(ranks: int, threads: int) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        path = epik_bgq(os.path.join(tmp, "epik_bgq"), ranks, threads)
        cmd = ["mpirun", "--allow-run-as-root", "--oversubscribe", "-np", str(ranks), "-x",
               f"OMP_NUM_THREADS={threads}", str(SCOUT_BIN / "scout.hyb"), "--single-pass", "epik_bgq"]
        subprocess.run(cmd, cwd=tmp, check=True, capture_output=True)
        cube = read_cubex(Path(path) / "scout.cubex")
    return {
        "generator": f"epik_bgq(path, {ranks}, {threads})",
        "command": " ".join(cmd[:7] + ["scout.hyb"] + cmd[8:]),
        "locations": [[int(L.rank), int(L.thread)] for L in cube.locations],
        "metrics": {m: [round(float(x), 12) for x in cube.per_location(m)] for m in METRICS},
    }


def main() -> int:
    for ranks, threads in SHAPES:
        doc = record(ranks, threads)
        (HERE / f"scout_{ranks}x{threads}.json").write_text(json.dumps(doc, indent=1) + "\n")
        print(f"scout_{ranks}x{threads}.json: {len(doc['locations'])} locations")
    return 0


if __name__ == "__main__":
    sys.exit(main())
