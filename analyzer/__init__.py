"""The analyzer: replay a trace, compute the performance properties, build the severity cube.

``analyzer.analyze(path)`` runs the whole analysis and returns an
:class:`analyzer.cube.Cube`; ``analyzer.replay.replay(trace)`` gives the
replay context the patterns read.
"""

# Bound eagerly so that the name is the function, not the submodule of the
# same name (importing a submodule sets it as a package attribute).
from .analyze import analyze

__all__ = ["analyze"]
