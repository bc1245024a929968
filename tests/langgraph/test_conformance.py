"""LangGraph's own conformance suite against HandoffSaver, on a folder and on object storage: every capability."""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path

import pytest
from langgraph.checkpoint.conformance import checkpointer_test, validate
from langgraph.checkpoint.conformance.capabilities import ALL_CAPABILITIES

from handoff_files.langgraph import HandoffSaver


@pytest.fixture(params=["folder", "bucket"])
def root_of(request: pytest.FixtureRequest, tmp_path: Path) -> Callable[[], str]:
    """A fresh root per call: a folder, or a prefix in a bucket of the real object store (SeaweedFS)."""
    if request.param == "folder":
        return lambda: str(tmp_path / uuid.uuid4().hex)
    url: str = request.getfixturevalue("bucket_url")
    return lambda: f"{url}-{uuid.uuid4().hex[:12]}"


def test_the_conformance_suite_passes_every_capability_at_level_full(root_of: Callable[[], str]) -> None:
    @checkpointer_test(name="HandoffSaver")
    async def saver() -> AsyncIterator[HandoffSaver]:
        yield HandoffSaver(root_of())  # the suite asks for a fresh saver per capability

    report = asyncio.run(validate(saver))
    outcome = report.to_dict()
    failures = {name: result["failures"] for name, result in outcome["results"].items() if result["failures"]}
    assert not failures, failures
    detected = {name for name, result in outcome["results"].items() if result["detected"]}
    # FULL counts only what a saver implements: all eight must be there, the extended three included
    assert detected == {capability.value for capability in ALL_CAPABILITIES}
    assert report.passed_all_base()
    assert report.conformance_level() == "FULL"
