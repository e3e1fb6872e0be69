"""The two clients are what generate.py writes from one list of methods."""

import pathlib
import subprocess
import sys


def test_clients_are_generated_from_one_list() -> None:
    here = pathlib.Path(__file__).resolve().parents[1]
    done = subprocess.run([sys.executable, str(here / "generate.py"), "--check"], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
