"""A LangGraph graph checkpointed by grove in this process: two turns on a thread, then time
travel to the first turn's checkpoint and a different second turn, which grove keeps as a
sibling branch of the thread's session. `python langgraph_quickstart.py [STORE_DIR]` (default
./grove-store); needs the `[langgraph]` extra."""

from __future__ import annotations

import sys

from langchain_core.messages import AIMessage, HumanMessage
from langchain_core.runnables import RunnableConfig
from langgraph.graph import END, START, MessagesState, StateGraph

import grove_client
from grove_client.langgraph import GroveSaver


def answer(state: MessagesState) -> dict[str, list[AIMessage]]:
    """A stand-in for a model: it answers the last question by its length."""
    question = str(state["messages"][-1].content)
    return {"messages": [AIMessage(content=f"{len(question)} characters")]}


def main() -> None:
    store = sys.argv[1] if len(sys.argv) > 1 else "grove-store"
    builder = StateGraph(MessagesState)
    builder.add_node("answer", answer)
    builder.add_edge(START, "answer")
    builder.add_edge("answer", END)
    saver = GroveSaver(f"in-process:{store}")
    graph = builder.compile(checkpointer=saver)
    thread: RunnableConfig = {"configurable": {"thread_id": "quickstart"}}
    graph.invoke({"messages": [HumanMessage(content="What is a tree?")]}, thread)
    graph.invoke({"messages": [HumanMessage(content="And a branch?")]}, thread)
    # Back to the checkpoint after the first turn, and ask something else from there.
    first = [s for s in graph.get_state_history(thread) if len(s.values.get("messages", [])) == 2][0]
    graph.invoke({"messages": [HumanMessage(content="And a leaf?")]}, first.config)
    messages = graph.get_state(thread).values["messages"]
    print(f"thread quickstart: {len(messages)} messages, last: {messages[-1].content!r}")
    saver.client.close()
    with grove_client.open(store) as client:
        sessions = client.list_sessions()["sessions"]
        print(f"{len(sessions)} grove session(s); `grove tree` shows the branch the time travel made")


if __name__ == "__main__":
    main()
