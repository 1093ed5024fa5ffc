"""``expert-report``: the offline HTML presenter of a cube (:mod:`.html`, with its script and style in ``assets/``)."""
