"""The one exception type the trace library raises for unusable input."""

from __future__ import annotations


class TraceFormatError(Exception):
    """A trace file (or part of one) cannot be read.

    The message always names the file and, where they are known, the
    location, block number and byte offset of the damage, so that a single
    line tells the user what is wrong and where.  The same facts are kept as
    attributes for programs that want them.
    """

    def __init__(
        self,
        message: str,
        *,
        path: str | None = None,
        location: int | None = None,
        block: int | None = None,
        offset: int | None = None,
    ):
        self.reason = message
        self.path = path
        self.location = location
        self.block = block
        self.offset = offset
        super().__init__(self._compose())

    def _compose(self) -> str:
        where = []
        if self.location is not None:
            where.append(f"location {self.location}")
        if self.block is not None:
            where.append(f"block {self.block}")
        if self.offset is not None:
            where.append(f"byte {self.offset}")
        head = self.path if self.path is not None else "<trace>"
        if where:
            head += " (" + ", ".join(where) + ")"
        return f"{head}: {self.reason}"
