"""The client's one error type: what the server answered (its code, status and message), or
`transport` when the server could not be reached or its answer broke off."""

from __future__ import annotations

#: The codes of failures that may go away when the request is sent again: `unavailable` (503,
#: the server's database could not be reached), `busy` (409, another client holds the session's
#: turn, or grove gave up a commit that other writers kept overtaking) and `transport`.
RETRYABLE = frozenset({"unavailable", "busy", "transport"})


class GroveError(Exception):
    """An error answer of `grove serve` (docs/api.md, "Errors"), or a transport failure."""

    def __init__(self, code: str, status: int, message: str) -> None:
        super().__init__(f"{code}: {message}")
        #: The server's error code (`not_found`, `busy`, ...), or `transport`.
        self.code = code
        #: The HTTP status (0 for a transport failure).
        self.status = status
        #: The server's message.
        self.message = message

    @property
    def retryable(self) -> bool:
        """Whether the same request may succeed if sent again (`RETRYABLE`). A write that failed
        with `unavailable` or `transport` may still have been applied (the answer, not the
        commit, was lost): give appends their own entry `id` and send the same append again; the
        server answers a retry of an applied append as the first time, without storing it twice."""
        return self.code in RETRYABLE
