"""An OpenAI Agents SDK agent whose session memory is grove, in this process: two turns, then a
branch from before the second question and another question there; grove keeps both branches.
`python openai_agents_quickstart.py [STORE_DIR]` (default ./grove-store); needs the
`[openai-agents]` extra. The model is a stand-in that needs no network: use a real one
(`Agent(model="gpt-5-mini")`) and nothing else changes."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import AsyncIterator
from typing import Any

from agents import Agent, Model, ModelResponse, Runner, Usage, set_tracing_disabled
from openai.types.responses import ResponseOutputMessage, ResponseOutputText

from grove_client.openai_agents import GroveSession


class Counter(Model):
    """A stand-in for a model: it answers the last question by its length."""

    async def get_response(self, system_instructions: Any, input: Any, *args: Any, **kwargs: Any) -> ModelResponse:
        text = f"{len(input[-1]['content'])} characters"
        message = ResponseOutputText(type="output_text", text=text, annotations=[])
        output = ResponseOutputMessage(id="msg", type="message", role="assistant", status="completed", content=[message])
        return ModelResponse(output=[output], usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        raise NotImplementedError


async def main() -> None:
    store = sys.argv[1] if len(sys.argv) > 1 else "grove-store"
    set_tracing_disabled(True)
    agent = Agent(name="helper", instructions="Be brief.", model=Counter())
    session = GroveSession("quickstart", f"in-process:{store}")
    await Runner.run(agent, "What is a tree?", session=session)
    await Runner.run(agent, "And a branch?", session=session)
    await session.create_branch_from_turn(2)  # back to before the second question
    result = await Runner.run(agent, "And a leaf?", session=session)
    items = await session.get_items()
    branches = len(await session.list_branches())
    print(f"session quickstart: {len(items)} items, {branches} branches, last answer: {result.final_output!r}")
    await session.close()


if __name__ == "__main__":
    asyncio.run(main())
