"""grove in this Python process (the extension module, no server): a session, two appends, a
branch, the context. `python quickstart.py [STORE_DIR]` (default ./grove-store, made when
missing)."""

from __future__ import annotations

import os
import sys
import time

import grove_client


def main() -> None:
    store = sys.argv[1] if len(sys.argv) > 1 else "grove-store"
    now = int(time.time() * 1000)
    with grove_client.open(store, name="quickstart") as g:
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
        print(f"session {sid}: {len(messages)} messages in the context ({g.where})")
        for message in messages:
            print(f"  {message['role']}")


if __name__ == "__main__":
    main()
