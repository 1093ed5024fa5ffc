"""The analysis per share of whole processes: ``--mpi`` (one share per MPI rank) and ``--memory`` (shares
run one after another in one process, their data spilled to disk between stages).

A share walks its processes, exchanges only what its wait states need with the other shares (the send
rows of messages its processes receive, the extreme members of collective instances), computes the
patterns for its own locations, and hands rank 0 the columns of the cube it owns.  See
docs/architecture.md ("Shares") and docs/performance.md.
"""

#: ``ctx.derived`` key under which an analysis by shares leaves ``analyzer.analyze.collective_mismatches``' lines
#: (share 0 holds no collectives rows; the instances' owner shares counted the mismatched ones)
MISMATCHES = "analyzer.collective_mismatches"
#: ``ctx.derived`` key under which an analysis by shares leaves the problem lines of the root-cause analysis it ran
#: per share (``share_root_cause``), for share 0 to report where the serial analysis does
ROOT_CAUSE_PROBLEMS = "analyzer.root_cause_problems"
#: the pattern modules of the root-cause analysis, which the analysis by shares computes with exchanges of its own
#: (``share_root_cause``) instead of gathering their tables to share 0
ROOT_CAUSE_MODULES = ("patterns.delay", "patterns.critical_path", "patterns.pop")
