"""The analyzer: replay a trace, compute the performance properties, build the severity cube.

``analyzer.analyze(path)`` runs the whole analysis and returns an
:class:`analyzer.cube.Cube`; ``analyzer.replay.replay(trace)`` gives the
replay context the patterns read.
"""


def analyze(path_or_trace, patterns=None, plugins: bool = True, progress=None):
    """Analyze a trace and return its severity cube (see :func:`analyzer.analyze.analyze`)."""
    from .analyze import analyze as _analyze

    return _analyze(path_or_trace, patterns=patterns, plugins=plugins, progress=progress)


__all__ = ["analyze"]
