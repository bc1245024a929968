"""LangGraph's own conformance suite against HandoffSaver: every capability detected and passing."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from pathlib import Path

from langgraph.checkpoint.conformance import checkpointer_test, validate
from langgraph.checkpoint.conformance.capabilities import ALL_CAPABILITIES

from handoff_files.langgraph import HandoffSaver


def test_the_conformance_suite_passes_every_capability_at_level_full(tmp_path: Path) -> None:
    @checkpointer_test(name="HandoffSaver")
    async def saver() -> AsyncIterator[HandoffSaver]:
        root = tmp_path / uuid.uuid4().hex  # the suite asks for a fresh saver per capability
        yield HandoffSaver(root)

    report = asyncio.run(validate(saver))
    outcome = report.to_dict()
    failures = {name: result["failures"] for name, result in outcome["results"].items() if result["failures"]}
    assert not failures, failures
    detected = {name for name, result in outcome["results"].items() if result["detected"]}
    # FULL counts only what a saver implements: all eight must be there, the extended three included
    assert detected == {capability.value for capability in ALL_CAPABILITIES}
    assert report.passed_all_base()
    assert report.conformance_level() == "FULL"
