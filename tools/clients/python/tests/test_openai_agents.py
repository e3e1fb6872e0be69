"""`GroveSession` under the OpenAI Agents SDK: a real `Runner` loop (with a model that answers
from a script, no network) keeps its history on grove, and every operation of the `Session`
protocol is compared with the SDK's own `SQLiteSession` doing the same; the branches persist
across session objects and processes' worth of reopening. Runs on both transports (the socket
fixture is the store in this process with GROVE_TRANSPORT=in-process)."""

from __future__ import annotations

import hashlib
import json
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
from agents import Agent, Model, ModelResponse, Runner, SQLiteSession, Usage, function_tool, set_tracing_disabled
from agents.models.interface import ModelTracing
from openai.types.responses import ResponseFunctionToolCall, ResponseOutputMessage, ResponseOutputText

from grove_client import AsyncGroveClient
from grove_client.openai_agents import GroveSession, session_of

from .conftest import Server

# No trace export: the tests run without network or an API key.
set_tracing_disabled(True)


class ScriptedModel(Model):
    """Answers each call with the next output of its script; records the input it was given."""

    def __init__(self, script: list[list[Any]]) -> None:
        self.script = list(script)
        self.inputs: list[Any] = []

    async def get_response(self, system_instructions: Any, input: Any, model_settings: Any, tools: Any, output_schema: Any, handoffs: Any, tracing: ModelTracing, **_: Any) -> ModelResponse:
        self.inputs.append(json.loads(json.dumps(input, default=str)))
        return ModelResponse(output=self.script.pop(0), usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        raise NotImplementedError


def say(text: str) -> ResponseOutputMessage:
    return ResponseOutputMessage(
        id=f"msg_{uuid.uuid4().hex[:12]}",
        type="message",
        role="assistant",
        status="completed",
        content=[ResponseOutputText(type="output_text", text=text, annotations=[])],
    )


def call(name: str, arguments: dict[str, Any]) -> ResponseFunctionToolCall:
    return ResponseFunctionToolCall(
        id=f"fc_{uuid.uuid4().hex[:12]}", call_id=f"call_{uuid.uuid4().hex[:12]}", type="function_call", name=name, arguments=json.dumps(arguments)
    )


@function_tool
def weather(city: str) -> str:
    """The weather in a city."""
    return f"sunny in {city}"


def user(text: str) -> dict[str, Any]:
    return {"role": "user", "content": text}


async def test_a_runner_keeps_its_history_on_grove(server: Server) -> None:
    sid = f"run-{uuid.uuid4().hex[:8]}"
    model = ScriptedModel([
        [call("weather", {"city": "Oslo"})],
        [say("It is sunny in Oslo.")],
        [say("You asked about Oslo.")],
    ])
    agent = Agent(name="helper", instructions="Be brief.", model=model, tools=[weather])
    session = GroveSession(sid, server.socket_url)
    try:
        first = await Runner.run(agent, "Weather in Oslo?", session=session)
        assert first.final_output == "It is sunny in Oslo."
        second = await Runner.run(agent, "What did I ask?", session=session)
        assert second.final_output == "You asked about Oslo."
        # The model's third call saw the whole first turn, read back from grove.
        kinds = [item.get("type", "message") for item in model.inputs[2]]
        assert kinds == ["message", "function_call", "function_call_output", "message", "message"]
        assert model.inputs[2][0]["content"] == "Weather in Oslo?"
        assert model.inputs[2][2]["output"] == "sunny in Oslo"
        items = await session.get_items()
        assert len(items) == 6
        assert items[-1]["content"][0]["text"] == "You asked about Oslo."
    finally:
        await session.close()
    # A new session object (as a new process would make) reads the same history.
    again = GroveSession(sid, server.socket_url)
    try:
        assert len(await again.get_items()) == 6
        client = AsyncGroveClient(server.socket_url)
        try:
            entries = [entry async for entry in client.path(session_of(sid))]
            assert [entry["customType"] for entry in entries] == ["openai.agents.item"] * 6
        finally:
            await client.close()
    finally:
        await again.close()


async def test_every_operation_agrees_with_the_sdks_sqlite_session(server: Server) -> None:
    sid = f"diff-{uuid.uuid4().hex[:8]}"
    grove = GroveSession(sid, server.socket_url)
    sqlite = SQLiteSession(sid)
    steps: list[tuple[str, Any]] = [
        ("get", None),
        ("pop", None),
        ("add", [user("a"), {"role": "assistant", "content": "b"}]),
        ("add", []),
        ("add", [user("c ü 😀"), {"type": "function_call", "call_id": "x", "name": "f", "arguments": "{}"}]),
        ("get", 1),
        ("get", 3),
        ("get", 0),
        ("get", 99),
        ("pop", None),
        ("get", None),
        ("add", [{"type": "function_call_output", "call_id": "x", "output": "1"}]),
        ("pop", None),
        ("pop", None),
        ("get", None),
        ("clear", None),
        ("get", None),
        ("pop", None),
        ("add", [user("after clear")]),
        ("get", None),
    ]
    try:
        for op, arg in steps:
            if op == "get":
                assert await grove.get_items(arg) == await sqlite.get_items(arg), (op, arg)
            elif op == "add":
                await grove.add_items(arg)
                await sqlite.add_items(arg)
            elif op == "pop":
                assert await grove.pop_item() == await sqlite.pop_item(), op
            else:
                await grove.clear_session()
                await sqlite.clear_session()
    finally:
        await grove.close()
        sqlite.close()


async def test_branches_persist_and_switch(server: Server) -> None:
    sid = f"branch-{uuid.uuid4().hex[:8]}"
    session = GroveSession(sid, server.socket_url)
    try:
        assert await session.list_branches() == [{"branch_id": "main", "tip": None, "is_current": True, "message_count": 0, "user_turns": 0}]
        await session.add_items([user("q1"), {"role": "assistant", "content": "a1"}, user("q2"), {"role": "assistant", "content": "a2"}])
        name = await session.create_branch_from_turn(2, "retry")
        assert name == "retry"
        assert await session.current_branch_id() == "retry"
        assert [item["content"] for item in await session.get_items()] == ["q1", "a1"]
        await session.add_items([user("q2 again"), {"role": "assistant", "content": "a2'"}])
        with pytest.raises(ValueError, match="exists already"):
            await session.create_branch_from_turn(1, "main")
        with pytest.raises(ValueError, match="no user turn 5"):
            await session.create_branch_from_turn(5)
        with pytest.raises(ValueError, match="no branch 'nope'"):
            await session.switch_to_branch("nope")
        await session.switch_to_branch("main")
        assert [item["content"] for item in await session.get_items()] == ["q1", "a1", "q2", "a2"]
    finally:
        await session.close()
    # Another session object sees the branches, their tips and the current one.
    again = GroveSession(sid, server.socket_url)
    try:
        listed = await again.list_branches()
        assert [(b["branch_id"], b["is_current"], b["message_count"], b["user_turns"]) for b in listed] == [
            ("main", True, 4, 2),
            ("retry", False, 4, 2),
        ]
        await again.switch_to_branch("retry")
        assert [item["content"] for item in await again.get_items()] == ["q1", "a1", "q2 again", "a2'"]
        assert await again.pop_item() == {"role": "assistant", "content": "a2'"}
        await again.switch_to_branch("main")
        await again.switch_to_branch("retry")
        assert [item["content"] for item in await again.get_items()] == ["q1", "a1", "q2 again"]
        named = await again.create_branch_from_content("q2 again")
        assert named.startswith("branch_from_turn_2_")
        assert [item["content"] for item in await again.get_items()] == ["q1", "a1"]
        await again.clear_session()
        assert await again.get_items() == []
        assert [b["branch_id"] for b in await again.list_branches()] == ["main"]
        # Nothing was deleted: every item is still in the tree.
        client = AsyncGroveClient(server.socket_url)
        try:
            tree = await client.tree(session_of(sid))
            assert len(tree["nodes"]) == 6
        finally:
            await client.close()
    finally:
        await again.close()


async def test_any_sdk_session_id_is_a_grove_session(server: Server) -> None:
    assert session_of("user:42/é") == "oa-" + "user:42/é".encode().hex()
    long = "x" * 200
    assert session_of(long) == "oa." + hashlib.sha256(long.encode()).hexdigest()
    session = GroveSession(long, server.socket_url)
    try:
        await session.add_items([user("long")])
        assert await session.get_items() == [user("long")]
    finally:
        await session.close()
