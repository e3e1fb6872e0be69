"""Starting a `grove serve` for an example or a benchmark: the command is run with grove's own
environment variables left out (the command line says everything), and the server is ready
when its first line says where it listens."""

from __future__ import annotations

import os
import subprocess


def start(command: list[str]) -> subprocess.Popen[str]:
    """Runs `command` (a `grove ... serve --socket PATH`) and returns once it listens; a server
    that says anything else first is killed and a `RuntimeError` names what it said."""
    proc = subprocess.Popen(
        command,
        stdout=subprocess.PIPE,
        text=True,
        env={k: v for k, v in os.environ.items() if not k.startswith("GROVE_")},
    )
    assert proc.stdout is not None
    line = proc.stdout.readline()
    if not line.startswith("listening on unix:"):
        proc.kill()
        raise RuntimeError(f"grove serve did not start: {line!r}")
    return proc
