"""A real `grove serve` for the tests: a fresh store, a unix socket and a TCP listener with a
token. `GROVE_BIN` names the binary (default: the workspace's target/debug/grove)."""

from __future__ import annotations

import os
import pathlib
import subprocess
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass

import pytest

TOKEN = "python-test-token-0123456789"
ROOT = pathlib.Path(__file__).resolve().parents[4]


@dataclass
class Server:
    socket_url: str
    tcp_url: str
    token: str


@pytest.fixture(scope="session")
def server() -> Iterator[Server]:
    binary = os.environ.get("GROVE_BIN") or str(ROOT / "target" / "debug" / "grove")
    if not pathlib.Path(binary).exists():
        raise RuntimeError(f"no grove binary at {binary}: run `cargo build -p grove-tools` or set GROVE_BIN")
    with tempfile.TemporaryDirectory() as tmp:
        token_file = pathlib.Path(tmp, "token")
        token_file.write_text(TOKEN + "\n")
        socket = pathlib.Path(tmp, "grove.sock")
        proc = subprocess.Popen(
            [binary, "--store", str(pathlib.Path(tmp, "store")), "--durability", "none", "serve",
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
