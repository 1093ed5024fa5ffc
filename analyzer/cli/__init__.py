"""Command-line entry points: ``expert-analyze`` (:mod:`.analyze`); ``expert-diff``, ``expert-check``,
``expert-report`` and ``expert-profile`` (:mod:`.tools`)."""
