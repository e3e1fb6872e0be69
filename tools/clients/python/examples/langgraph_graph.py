"""A small LangGraph agent with a deterministic fake model, for the LangGraph benchmark
(`examples/langgraph_bench.py`) and the graph tests (`tests/test_langgraph_graph.py`).

The graph is LangGraph's usual agent loop on `MessagesState` (messages merged by
`add_messages`): `model` answers the last human message, and on every `TOOL_EVERY`-th question
it first calls a tool, whose answer the `tools` node adds before `model` runs again. The model is
a plain function: the same questions give the same messages, ids included, on any checkpointer.
A turn whose model calls the tool adds four messages in four supersteps, any other turn two in
two (plus the input checkpoint of each turn)."""

from __future__ import annotations

import hashlib
from typing import Any

from langchain_core.messages import AIMessage, AnyMessage, HumanMessage, ToolMessage
from langgraph.checkpoint.base import BaseCheckpointSaver
from langgraph.graph import END, START, MessagesState, StateGraph
from langgraph.graph.state import CompiledStateGraph

TOOL_EVERY = 3
WORDS = (
    "branch checkpoint session entry leaf tree thread channel value version history replay "
    "context message answer question tool result store index record operation"
).split()


def text(seed: str, min_words: int, max_words: int) -> str:
    """Deterministic filler: between `min_words` and `max_words` words chosen by `seed`."""
    digest = hashlib.blake2b(seed.encode(), digest_size=64).digest()
    count = min_words + digest[0] % (max_words - min_words + 1)
    return " ".join(WORDS[digest[1 + i % 63] % len(WORDS)] + str(i) for i in range(count))


def question(label: str) -> HumanMessage:
    """The human message of a turn, its id and content derived from `label`."""
    return HumanMessage(content=f"Question {label}: " + text(f"q{label}", 8, 30), id=f"h-{label}")


def _turn(messages: list[AnyMessage]) -> tuple[int, HumanMessage]:
    humans = [m for m in messages if isinstance(m, HumanMessage)]
    return len(humans), humans[-1]


def model(state: MessagesState) -> dict[str, list[AnyMessage]]:
    """The fake model: a tool call on every `TOOL_EVERY`-th question, else an answer whose
    content derives from the turn number and the question."""
    messages = state["messages"]
    turn, human = _turn(messages)
    last = messages[-1]
    if isinstance(last, HumanMessage) and turn % TOOL_EVERY == 0:
        call = {"name": "lookup", "args": {"query": str(human.content)[:40], "turn": turn}, "id": f"{human.id}-call"}
        return {"messages": [AIMessage(content="", tool_calls=[call], id=f"{human.id}-ai-call")]}
    answer = f"Answer {turn} to {human.id}: " + text(f"a{turn}:{human.content}", 20, 120)
    return {"messages": [AIMessage(content=answer, id=f"{human.id}-ai")]}


def tools(state: MessagesState) -> dict[str, list[AnyMessage]]:
    """The tool: a result of 100 to 300 words for each call of the last message."""
    last = state["messages"][-1]
    assert isinstance(last, AIMessage)
    results: list[AnyMessage] = []
    for call in last.tool_calls:
        call_id = str(call["id"])
        content = f"lookup({call['args']['query']!r}): " + text(call_id, 100, 300)
        results.append(ToolMessage(content=content, tool_call_id=call_id, id=f"{call_id}-result"))
    return {"messages": results}


def route(state: MessagesState) -> str:
    """After the model: the tools when it called one, else the end of the turn."""
    last = state["messages"][-1]
    return "tools" if isinstance(last, AIMessage) and last.tool_calls else END


def build_graph(checkpointer: BaseCheckpointSaver[Any]) -> CompiledStateGraph[Any, Any, Any, Any]:
    """The agent graph compiled with `checkpointer`."""
    graph = StateGraph(MessagesState)
    graph.add_node("model", model)
    graph.add_node("tools", tools)
    graph.add_edge(START, "model")
    graph.add_conditional_edges("model", route)
    graph.add_edge("tools", "model")
    return graph.compile(checkpointer=checkpointer)


def summary(messages: list[AnyMessage]) -> list[tuple[str, str | None, str]]:
    """What two runs of the graph must agree on: each message's type, id and content."""
    return [(m.type, m.id, str(m.content)) for m in messages]
