"""Starts a source instrumentation tool of the package expert_opari beside this file:

    launch.py instrument ARGS...   expert-instrument (expert_opari.cli)
    launch.py cc ARGS...           expert-cc (expert_opari.cc)

runtime/bin/expert-instrument and expert-cc run this file as a script, so that sys.path[0] is this
directory (never the caller's working directory) and the package is imported once, by its own name.
"""
import sys

TOOLS = {"instrument": "expert_opari.cli", "cc": "expert_opari.cc"}

if __name__ == "__main__":
    if len(sys.argv) < 2 or sys.argv[1] not in TOOLS:
        sys.exit(f"usage: {sys.argv[0]} {'|'.join(TOOLS)} ARGS...")
    module = __import__(TOOLS[sys.argv[1]], fromlist=["main"])
    sys.exit(module.main(sys.argv[2:]))
