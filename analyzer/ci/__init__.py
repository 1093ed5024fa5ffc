"""Results compared for people and CI: ``expert-diff`` (:mod:`.compare`) and the ``expert-check`` gate (:mod:`.check`)."""
