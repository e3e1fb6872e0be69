"""The extension module (native/src/lib.rs): the store opened in this process."""

from typing import Optional

class NativeReply:
    status: int
    def read(self) -> Optional[bytes]: ...
    def close(self) -> None: ...

class NativeStore:
    @staticmethod
    def open(
        path: str,
        durability: Optional[str] = None,
        backend: Optional[str] = None,
        cache_bytes: Optional[int] = None,
        payload_threshold: Optional[int] = None,
        lock_wait_seconds: Optional[float] = None,
        read_only: bool = False,
    ) -> NativeStore: ...
    def request(
        self, method: str, target: str, headers: list[tuple[str, str]], body: Optional[bytes] = None
    ) -> tuple[int, str]: ...
    def stream(
        self, method: str, target: str, headers: list[tuple[str, str]], body: Optional[bytes] = None
    ) -> NativeReply: ...
    def close(self) -> None: ...
