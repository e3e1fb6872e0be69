"""The client's one error type: what the server answered (its code, status and message), or
`transport` when the server could not be reached or its answer broke off."""

from __future__ import annotations


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
