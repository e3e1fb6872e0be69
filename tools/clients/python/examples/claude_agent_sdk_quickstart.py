"""The Claude Agent SDK's session store on grove, in this process: a transcript is appended as
the SDK mirrors one from Claude Code, then read, forked at its first answer and listed with the
SDK's own store helpers. `python claude_agent_sdk_quickstart.py [STORE_DIR]` (default
./grove-store); needs the `[claude-agent-sdk]` extra. No Claude Code process or API key is
needed here; with one, pass the store to `query()` as `ClaudeAgentOptions(session_store=store)`."""

from __future__ import annotations

import asyncio
import sys
import uuid
from typing import Any

from claude_agent_sdk import fork_session_via_store, get_session_messages_from_store, list_sessions_from_store, project_key_for_directory
from claude_agent_sdk.types import SessionKey

from grove_client.claude_agent_sdk import GroveSessionStore


def turn(sid: str, question: str, answer: str, parent: Any) -> list[Any]:
    """A user message and the assistant's answer, as Claude Code writes them."""
    asked, answered = str(uuid.uuid4()), str(uuid.uuid4())
    common = {"sessionId": sid, "isSidechain": False, "timestamp": "2026-12-01T10:00:00.000Z"}
    return [
        {"type": "user", "uuid": asked, "parentUuid": parent, **common, "message": {"role": "user", "content": question}},
        {"type": "assistant", "uuid": answered, "parentUuid": asked, **common,
         "message": {"role": "assistant", "content": [{"type": "text", "text": answer}]}},
    ]


async def main() -> None:
    store = GroveSessionStore(f"in-process:{sys.argv[1] if len(sys.argv) > 1 else 'grove-store'}")
    directory, sid = "/work/project", str(uuid.uuid4())
    key: SessionKey = {"project_key": project_key_for_directory(directory), "session_id": sid}
    first = turn(sid, "What is a tree?", "Nodes and edges, no cycles.", None)
    await store.append(key, first)
    await store.append(key, turn(sid, "And a branch?", "A path from a leaf.", first[-1]["uuid"]))
    messages = await get_session_messages_from_store(store, sid, directory=directory)
    fork = await fork_session_via_store(store, sid, directory=directory, up_to_message_id=first[-1]["uuid"])
    forked = await get_session_messages_from_store(store, fork.session_id, directory=directory)
    sessions = await list_sessions_from_store(store, directory=directory)
    print(f"claude session: {len(messages)} messages, fork: {len(forked)} messages, {len(sessions)} sessions listed")
    await store.close()


if __name__ == "__main__":
    asyncio.run(main())
