"""The capability gate: registry files read strictly, gate and route decisions, refusal before anything is written."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from handoff_files import InvalidNameError
from handoff_files.foundation.errors import CapabilityError
from handoff_files.inbox.capabilities import AgentEntry, AgentRegistry
from handoff_files.inbox.lifecycle import HandoffInbox
from handoff_files.inbox.status import HandoffStatus

DOCUMENT: dict[str, Any] = {
    "agents": {
        "lead": {"capabilities": ["python", "sql"], "scope": ["python", "sql", "review"]},
        "zed": {"capabilities": ["python", "sql", "review"]},
        "coder": {"capabilities": ["python"], "scope": ["python"]},
        "analyst": {"capabilities": ["sql", "python"]},
        "intern": {},
    }
}

YAML = """\
# who can do what, and what each may hand on
agents:
  lead: {capabilities: [python, sql], scope: [python, sql, review]}
  zed:
    capabilities: [python, sql, review]
  coder: {capabilities: [python], scope: [python]}
  analyst: {capabilities: [sql, python]}
  intern: {}
"""


@pytest.fixture
def registry() -> AgentRegistry:
    """The registry of DOCUMENT, built from the mapping."""
    return AgentRegistry.from_document(DOCUMENT)


@pytest.mark.parametrize(
    ("name", "text"),
    [
        pytest.param("agents.json", json.dumps(DOCUMENT), id="json"),
        pytest.param("agents.yaml", YAML, id="yaml"),
    ],
)
def test_a_registry_file_loads_from_json_or_yaml_alike(tmp_path: Path, name: str, text: str) -> None:
    path = tmp_path / name
    path.write_text(text)
    loaded = AgentRegistry.load(path)
    assert loaded.agents == AgentRegistry.from_document(DOCUMENT).agents
    assert list(loaded.agents) == ["analyst", "coder", "intern", "lead", "zed"]
    assert loaded.agents["intern"] == AgentEntry(frozenset(), frozenset())
    assert loaded.source == str(path)
    assert "coder" in loaded
    assert "nobody" not in loaded


@pytest.mark.parametrize(
    ("text", "words"),
    [
        pytest.param('{"agents": {', "JSON", id="torn-json"),
        pytest.param('{"agents": {}, "agents": {}}', "uplicate", id="duplicate-key-json"),
        pytest.param("agents: {}\nagents: {}\n", "uplicate", id="duplicate-key-yaml"),
        pytest.param("agents: !!python/object:os.system {}\n", "tag", id="yaml-tag"),
        pytest.param('{"agents": {"a": {"capabilities": [NaN]}}}', "NaN", id="nan"),
        pytest.param("[1, 2]", "mapping", id="top-level-list"),
        pytest.param("{}", "exactly one key", id="no-agents"),
        pytest.param('{"agents": {}, "version": 2}', "exactly one key", id="extra-top-level-key"),
        pytest.param('{"agents": ["lead"]}', "agents must map", id="agents-a-list"),
        pytest.param('{"agents": {"../lead": {}}}', "not a valid id", id="bad-agent-id"),
        pytest.param('{"agents": {"lead": ["python"]}}', "must be an object", id="entry-a-list"),
        pytest.param('{"agents": {"lead": {"skills": []}}}', "unknown key", id="unknown-entry-key"),
        pytest.param('{"agents": {"lead": {"capabilities": "python"}}}', "list of capability names", id="lone-string"),
        pytest.param('{"agents": {"lead": {"scope": ["has space"]}}}', "not a capability name", id="bad-capability"),
        pytest.param('{"agents": {"lead": {"scope": [3]}}}', "not a capability name", id="capability-a-number"),
    ],
)
def test_a_malformed_registry_file_is_a_capability_error_naming_the_file(tmp_path: Path, text: str, words: str) -> None:
    path = tmp_path / "agents.json"
    path.write_text(text)
    with pytest.raises(CapabilityError, match=words) as caught:
        AgentRegistry.load(path)
    assert caught.value.path == str(path)


def test_a_missing_registry_file_is_a_capability_error_naming_it(tmp_path: Path) -> None:
    with pytest.raises(CapabilityError, match="no such file") as caught:
        AgentRegistry.load(tmp_path / "absent.json")
    assert caught.value.path == str(tmp_path / "absent.json")


@pytest.mark.parametrize(
    ("source", "target", "required", "reason"),
    [
        pytest.param("lead", "coder", ["python"], None, id="allowed"),
        pytest.param("lead", "analyst", ["python", "sql"], None, id="allowed-two"),
        pytest.param("intern", "coder", [], None, id="nothing-required-needs-no-scope"),
        pytest.param("lead", "coder", ["sql"], "coder lacks sql", id="target-lacks"),
        pytest.param("lead", "intern", ["python", "sql"], "intern lacks python, sql", id="target-lacks-two"),
        pytest.param("coder", "analyst", ["sql"], "sql outside coder's delegation scope", id="outside-scope"),
        pytest.param(
            "coder", "lead", ["review"], "lead lacks review; review outside coder's delegation scope", id="both"
        ),
        pytest.param("lead", "nobody", [], "nobody not in the agent registry (<registry>)", id="unknown-target"),
        pytest.param("nobody", "coder", [], "nobody not in the agent registry (<registry>)", id="unknown-source"),
        pytest.param("nobody", "none", [], "nobody and none not in the agent registry (<registry>)", id="both-unknown"),
    ],
)
def test_the_gate_allows_only_what_the_target_can_do_and_the_source_may_delegate(
    registry: AgentRegistry, source: str, target: str, required: list[str], reason: str | None
) -> None:
    assert registry.gate(source, target, required) == reason


def test_the_gate_needs_both_halves_of_the_intersection(registry: AgentRegistry) -> None:
    # zed can review and lead may delegate review: allowed; coder may not delegate it, analyst cannot do it
    assert registry.gate("lead", "zed", ["review"]) is None
    assert registry.gate("coder", "zed", ["review"]) is not None
    assert registry.gate("lead", "analyst", ["review"]) is not None


@pytest.mark.parametrize(
    ("source", "target", "required", "error"),
    [
        pytest.param("../lead", "coder", [], InvalidNameError, id="bad-source-id"),
        pytest.param("lead", "", [], InvalidNameError, id="bad-target-id"),
        pytest.param("lead", "coder", "python", CapabilityError, id="required-a-string"),
        pytest.param("lead", "coder", ["a b"], CapabilityError, id="bad-capability"),
    ],
)
def test_the_gate_refuses_malformed_questions(
    registry: AgentRegistry, source: str, target: str, required: Any, error: type[Exception]
) -> None:
    with pytest.raises(error):
        registry.gate(source, target, required)


def test_route_takes_the_first_capable_agent_by_id_and_never_the_source(registry: AgentRegistry) -> None:
    assert registry.route("lead", ["python"]) == "analyst"
    assert registry.route("lead", ["python", "sql"]) == "analyst"
    assert registry.route("lead", ["review"]) == "zed"
    assert registry.route("lead", []) == "analyst"
    # lead itself can do python and sql, and may delegate them, but never gets its own request
    only_lead = AgentRegistry({"lead": {"capabilities": ["sql"], "scope": ["sql"]}, "coder": {}})
    assert only_lead.route("lead", ["sql"]) is None
    assert only_lead.no_route_reason("lead", ["sql"]) == "no registered agent other than lead has sql"
    assert registry.route("coder", ["sql"]) is None
    assert registry.no_route_reason("coder", ["sql"]) == "sql outside coder's delegation scope"
    # a refusal's reason says what was missing: another agent at all, or one agent with every capability
    alone = AgentRegistry({"lead": {"scope": ["python", "sql"]}, "coder": {"capabilities": ["sql"]}})
    assert alone.no_route_reason("lead", ["python", "sql"]) == (
        "no registered agent other than lead has all of python, sql"
    )
    alone = AgentRegistry({"lead": {"scope": ["python", "sql"]}})
    assert alone.route("lead", []) is None
    assert alone.no_route_reason("lead", []) == "no agent other than lead in the agent registry (<registry>)"
    assert registry.route("nobody", []) is None
    assert registry.no_route_reason("nobody", []).startswith("nobody not in the agent registry")


def test_route_is_the_same_whatever_order_the_file_lists_agents(registry: AgentRegistry) -> None:
    reversed_document = {"agents": dict(reversed(list(DOCUMENT["agents"].items())))}
    again = AgentRegistry.from_document(reversed_document)
    for required in ([], ["python"], ["sql"], ["review"], ["python", "sql"]):
        assert again.route("lead", required) == registry.route("lead", required)


def test_a_registry_cannot_be_changed_through_what_it_hands_out(registry: AgentRegistry) -> None:
    with pytest.raises(TypeError):
        registry.agents["intruder"] = AgentEntry(frozenset({"sql"}), frozenset())  # type: ignore[index]
    with pytest.raises(AttributeError):
        registry.agents["coder"].capabilities.add("sql")  # type: ignore[attr-defined]
    assert registry.gate("lead", "coder", ["sql"]) == "coder lacks sql"


def test_a_request_refused_by_the_gate_writes_nothing_and_reaches_no_one(
    tmp_path: Path, registry: AgentRegistry
) -> None:
    inbox = HandoffInbox(tmp_path / "inbox", registry=registry)
    refused = inbox.request_handoff("coder", "analyst", "please", capabilities_required=["sql"])
    assert refused.status is HandoffStatus.REJECTED
    assert refused.rejection_reason == "refused by the capability gate: sql outside coder's delegation scope"
    assert not (tmp_path / "inbox").exists()
    assert inbox.get_pending_handoffs("analyst") == []
    # the same request within scope goes through: the refusal above was the gate, not the inbox
    allowed = inbox.request_handoff("lead", "analyst", "please", capabilities_required=["sql"])
    assert allowed.status is HandoffStatus.PENDING
    assert [r.handoff_id for r in inbox.get_pending_handoffs("analyst")] == [allowed.handoff_id]
