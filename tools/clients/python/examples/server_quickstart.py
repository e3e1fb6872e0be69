"""grove from Python through `grove serve`: a session, two appends, a branch, the context.

Run it with a server up: `grove serve --store /tmp/grove --socket /tmp/grove/grove.sock`, then
`python server_quickstart.py` (GROVE_URL, if set, names another server)."""

from __future__ import annotations

import os
import time

from grove_client import GroveClient


def main() -> None:
    url = os.environ.get("GROVE_URL", "unix:/tmp/grove/grove.sock")
    now = int(time.time() * 1000)
    with GroveClient(url, name="quickstart") as g:
        session = g.create_session(cwd=os.getcwd())
        sid = str(session["id"])
        question = g.append(sid, {"role": "user", "content": "What is 2 + 2?", "timestamp": now})
        zero = {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "total": 0}
        g.append(
            sid,
            {
                "role": "assistant",
                "content": [{"type": "text", "text": "4"}],
                "provider": "example",
                "model": "example-1",
                "usage": {"input": 0, "output": 0, "cacheRead": 0, "cacheWrite": 0, "totalTokens": 0, "cost": zero},
                "stopReason": "stop",
                "timestamp": now,
            },
        )
        # Go back to the question and ask again: a sibling branch, nothing overwritten.
        g.set_leaf(sid, question)
        g.append(sid, {"role": "user", "content": "And 3 + 3?", "timestamp": now})
        messages = g.context(sid)["messages"]
        print(f"session {sid}: {len(messages)} messages in the context")
        for message in messages:
            print(f"  {message['role']}")


if __name__ == "__main__":
    main()
