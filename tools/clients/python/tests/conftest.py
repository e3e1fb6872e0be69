"""A real `grove serve` for the tests: a fresh store, a unix socket and a TCP listener with a
token. `GROVE_BIN` names the binary (default: the workspace's target/debug/grove)."""

from __future__ import annotations

import os
import pathlib
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass

import pytest

TOKEN = "python-test-token-0123456789"
ROOT = pathlib.Path(__file__).resolve().parents[4]


@dataclass
class Server:
    socket_url: str
    tcp_url: str
    token: str


def grove_bin() -> str:
    """The grove binary the tests run: `GROVE_BIN`, else the workspace's debug build."""
    binary = os.environ.get("GROVE_BIN") or str(ROOT / "target" / "debug" / "grove")
    if not pathlib.Path(binary).exists():
        raise RuntimeError(f"no grove binary at {binary}: run `cargo build -p grove-tools` or set GROVE_BIN")
    return binary


@contextmanager
def serve(directory: pathlib.Path) -> Iterator[Server]:
    """`grove serve` on the store `directory/store` (created if missing), its socket and token
    file in `directory`; the server is stopped (and the store closed) when the block ends."""
    token_file = directory / "token"
    token_file.write_text(TOKEN + "\n")
    token_file.chmod(0o600)  # grove serve refuses a token file others may read
    socket = directory / "grove.sock"
    proc = subprocess.Popen(
        [grove_bin(), "--store", str(directory / "store"), "--durability", "none", "serve",
         "--socket", str(socket), "--listen", "127.0.0.1:0", "--token-file", str(token_file)],
        stdout=subprocess.PIPE,
        text=True,
    )
    tcp_url = ""
    assert proc.stdout is not None
    for line in proc.stdout:
        if line.startswith("listening on http://"):
            tcp_url = line.strip()[len("listening on ") :]
            break
    try:
        yield Server(socket_url=f"unix:{socket}", tcp_url=tcp_url, token=TOKEN)
    finally:
        proc.terminate()
        proc.wait(timeout=60)
        proc.stdout.close()


#: With GROVE_TRANSPORT=in-process, the tests' `socket_url` is a store opened in the test process
#: itself (`in-process:DIR`, the extension module): every test of the unix socket runs on it
#: (tools/test-all.sh runs the suite both ways); `tcp_url` stays the server's.
IN_PROCESS = os.environ.get("GROVE_TRANSPORT") == "in-process"


@pytest.fixture(scope="session")
def server() -> Iterator[Server]:
    with tempfile.TemporaryDirectory() as tmp, serve(pathlib.Path(tmp)) as running:
        if IN_PROCESS:
            running.socket_url = f"in-process:{pathlib.Path(tmp) / 'embedded'}"
        yield running
