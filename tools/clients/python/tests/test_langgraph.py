"""LangGraph's own conformance suite (langgraph-checkpoint-conformance) on AsyncGroveSaver,
against the real server: every base capability must pass."""

from __future__ import annotations

from collections.abc import AsyncIterator

from langgraph.checkpoint.conformance import checkpointer_test, validate  # type: ignore[import-untyped]

from grove_client.langgraph import AsyncGroveSaver

from .conftest import Server


async def test_the_conformance_suite_passes(server: Server) -> None:
    @checkpointer_test(name="grove")  # type: ignore[untyped-decorator]
    async def saver() -> AsyncIterator[AsyncGroveSaver]:
        yield AsyncGroveSaver(server.socket_url)

    report = await validate(saver)
    report.print_report()
    assert report.passed_all_base(), report.to_dict()
