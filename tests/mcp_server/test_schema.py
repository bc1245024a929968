"""What the model sees of the MCP tools: every limit and meaning in the input schemas, and errors in plain words."""

from __future__ import annotations

import inspect
from pathlib import Path
from typing import Any

from handoff_files.format.model import MAX_ITEMS, MAX_NARRATIVE, HandoffContent
from handoff_files.foundation.names import FOLDER_PATTERN, ID_PATTERN
from tests.mcp_server.helpers import LAYERS, Client, server, talk, text


def _properties(schema: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Every field of a tool's input schema and of the models it refers to, by dotted name."""
    found = dict(schema.get("properties", {}))
    for model, definition in schema.get("$defs", {}).items():
        found.update({f"{model}.{name}": field for name, field in definition.get("properties", {}).items()})
    return found


def test_the_input_schemas_carry_the_models_limits_and_describe_every_field(thread_dir: Path) -> None:
    async def session(client: Client) -> Any:
        return (await client.list_tools()).tools

    tools = {tool.name: tool for tool in talk(server("--thread", str(thread_dir)), session)}
    save = tools["handoff_save"].input_schema
    assert save["properties"]["narrative"]["maxLength"] == MAX_NARRATIVE == 65_536
    for layer in ("priorities", "warnings", "decisions"):
        assert save["properties"][layer]["maxItems"] == MAX_ITEMS, layer
    # every limit the handoff model puts on a layer is in the tool's schema too
    content = HandoffContent.model_json_schema()
    limits = {"maxLength", "minLength", "maxItems", "minItems", "maximum", "minimum", "pattern", "maxProperties"}
    for name, field in _properties(content).items():
        if name.split(".")[0] in ("Handoff", "Message", "Context", "Lineage", "Seal", "MigratedFrom", "AdoptedFrom"):
            continue
        tool_field = _properties(save).get(name)
        if tool_field is None:
            continue
        assert {k: v for k, v in field.items() if k in limits} == {
            k: v for k, v in tool_field.items() if k in limits
        }, name
    for tool in tools.values():
        assert tool.description == inspect.cleandoc(tool.description or ""), tool.name
        for name, field in _properties(tool.input_schema).items():
            assert field.get("description"), (tool.name, name)
    thread = next(branch for branch in save["properties"]["thread"]["anyOf"] if branch["type"] == "string")
    assert thread["pattern"] == FOLDER_PATTERN
    assert tools["adopt_checkpoint"].input_schema["properties"]["new_thread"]["pattern"] == FOLDER_PATTERN
    to_agent = tools["handoff_checkpoint"].input_schema["properties"]["to_agent"]["anyOf"]
    assert next(branch for branch in to_agent if branch["type"] == "string")["pattern"] == ID_PATTERN
    state = save["$defs"]["State"]["properties"]
    for name in ("energy_level", "error_count", "session_id"):
        assert len(state[name]["description"]) > 20, name


def test_invalid_arguments_come_back_in_plain_words_without_pydantics_links(thread_dir: Path) -> None:
    async def session(client: Client) -> list[Any]:
        return [
            await client.call_tool("handoff_save", {**LAYERS, "priorities": [{"task": "x", "urgency": "asap"}]}),
            await client.call_tool("handoff_save", {**LAYERS, "narrative": "n" * (MAX_NARRATIVE + 1)}),
            await client.call_tool("handoff_save", {**LAYERS, "state": {"energy_level": 2}}),
            await client.call_tool("handoff_history", {"limit": 0}),
        ]

    urgency, narrative, energy, limit = talk(server("--thread", str(thread_dir)), session)
    for result in (urgency, narrative, energy, limit):
        assert result.is_error
        assert "pydantic.dev" not in text(result)
        assert "For further information" not in text(result)
        assert "\n" not in text(result), text(result)
    assert "priorities.0.urgency: expected one of 'first', 'primary'" in text(urgency)
    assert "narrative: expected at most 65536 characters" in text(narrative)
    assert "state.energy_level: expected a number of at most 1" in text(energy)
    assert "limit: expected a number of at least 1" in text(limit)
    assert not (thread_dir / "handoff.json").exists()
