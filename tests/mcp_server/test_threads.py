"""What memory servers offer, through the official client: the threads, the briefing as a resource, a prompt."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from handoff_files import HandoffStore
from handoff_files.foundation.names import is_folder_name
from handoff_files.langgraph.layout import folder_name
from tests.mcp_server.helpers import LAYERS, Client, MCPError, server, talk, text


def test_a_root_server_lists_its_threads_with_their_newest_generation(tmp_path: Path) -> None:
    root, outside = tmp_path / "threads", tmp_path / "elsewhere"
    HandoffStore(root / "alpha").save(LAYERS)
    HandoffStore(root / "alpha").save(LAYERS)
    HandoffStore(root / "beta-1").save(LAYERS)
    HandoffStore(root / "Old-Caps").save(LAYERS)  # made by hand, or before the lower-case rule
    (root / "notes").mkdir()  # a folder that holds no thread
    (root / "README").write_text("not a thread\n")
    outside.mkdir()
    (root / "link").symlink_to(outside)

    async def session(client: Client) -> Any:
        return await client.call_tool("handoff_threads", {})

    result = talk(server("--root", str(root)), session)
    assert not result.is_error, text(result)
    listed = {entry["name"]: entry for entry in result.structured_content["threads"]}
    assert result.structured_content["root"] == str(root)
    assert list(listed) == ["Old-Caps", "alpha", "beta-1", "link"]
    assert listed["alpha"]["generation"] == 2
    assert listed["alpha"]["thread"] == str(root / "alpha")
    assert listed["alpha"]["created_at"].endswith("Z")
    assert listed["beta-1"]["generation"] == 1
    assert listed["alpha"]["problem"] is None
    assert "symbolic link" in listed["link"]["problem"]
    assert "lower-case" in listed["Old-Caps"]["problem"]
    assert sorted(p.name for p in outside.iterdir()) == []


def test_the_briefing_is_a_resource_and_resume_a_prompt_on_a_one_thread_server(thread_dir: Path) -> None:
    HandoffStore(thread_dir).save(LAYERS)

    async def session(client: Client) -> dict[str, Any]:
        out: dict[str, Any] = {"resources": (await client.list_resources()).resources}
        out["read"] = await client.read_resource("handoff://briefing")
        out["prompts"] = (await client.list_prompts()).prompts
        out["prompt"] = await client.get_prompt("resume")
        out["threads"] = await client.call_tool("handoff_threads", {})
        out["restored"] = await client.call_tool("handoff_restore", {})
        return out

    out = talk(server("--thread", str(thread_dir)), session)
    assert [str(resource.uri) for resource in out["resources"]] == ["handoff://briefing"]
    briefing = out["read"].contents[0].text
    assert briefing == out["restored"].structured_content["briefing"]
    code = out["restored"].structured_content["code"]
    resume = next(prompt for prompt in out["prompts"] if prompt.name == "resume")
    assert resume.title == "Resume from the handoff"
    message = out["prompt"].messages[0]
    assert message.role == "user"
    assert f"call handoff_acknowledge with code {code}" in message.content.text
    assert briefing in message.content.text
    assert [entry["name"] for entry in out["threads"].structured_content["threads"]] == [thread_dir.name]


def test_a_root_server_serves_each_threads_briefing_and_resume_by_name(tmp_path: Path) -> None:
    root = tmp_path / "threads"
    HandoffStore(root / "alpha").save(LAYERS)

    async def session(client: Client) -> dict[str, Any]:
        out: dict[str, Any] = {"templates": (await client.list_resource_templates()).resource_templates}
        out["read"] = await client.read_resource("handoff://threads/alpha/briefing")
        out["prompt"] = await client.get_prompt("resume", {"thread": "alpha"})
        out["fresh"] = await client.get_prompt("resume", {"thread": "gamma"})
        out["prompts"] = (await client.list_prompts()).prompts
        for key, call in (
            ("bad resource", client.read_resource("handoff://threads/CAPS/briefing")),
            ("bad prompt", client.get_prompt("resume", {"thread": "CAPS"})),
        ):
            with pytest.raises(MCPError) as refused:
                await call
            out[key] = str(refused.value)
        return out

    out = talk(server("--root", str(root)), session)
    assert [template.uri_template for template in out["templates"]] == ["handoff://threads/{thread}/briefing"]
    assert "port the CSV reader" in out["read"].contents[0].text
    assert "code " in out["prompt"].messages[0].content.text
    assert 'and thread "alpha"' in out["prompt"].messages[0].content.text
    assert "Nothing was handed off on this thread yet" in out["fresh"].messages[0].content.text
    assert not (root / "gamma").exists()  # a prompt reads only
    assert out["prompts"][0].arguments[0].description == "the thread's name under the server's root"
    for key in ("bad resource", "bad prompt"):  # the reason, not the SDK's "Internal server error"
        assert "thread 'CAPS' is not a valid id for a folder under the root" in out[key], (key, out[key])


def test_thread_names_under_a_root_follow_the_savers_folder_rule(tmp_path: Path) -> None:
    root = tmp_path / "threads"

    async def session(client: Client) -> list[Any]:
        save = {key: LAYERS[key] for key in ("narrative", "priorities")}
        return [
            await client.call_tool("handoff_save", {**save, "thread": "CAPS"}),
            await client.call_tool("handoff_save", {**save, "thread": "caps"}),
        ]

    caps, lower = talk(server("--root", str(root)), session)
    assert caps.is_error
    assert "thread 'CAPS' is not a valid id for a folder under the root" in text(caps)
    assert "('caps', say)" in text(caps)
    assert not lower.is_error, text(lower)
    assert sorted(p.name for p in root.iterdir()) == ["caps"]
    # one rule: a name the server takes is the saver's folder for that thread id, and CAPS is not
    for name in ("caps", "beta-1", "a.b_c", "CAPS", "Alpha", "x y"):
        assert is_folder_name(name) == (folder_name(name) == name), name


def test_with_one_thread_adopting_says_where_the_new_thread_goes(tmp_path: Path) -> None:
    source, mine, blobs = tmp_path / "a" / "source", tmp_path / "b" / "mine", tmp_path / "blobs"
    HandoffStore(source).save(LAYERS)
    mine.mkdir(parents=True)

    async def checkpoint(client: Client) -> Any:
        return (await client.call_tool("handoff_checkpoint", {})).structured_content["descriptor"]

    descriptor = talk(server("--thread", str(source), "--blobs", str(blobs)), checkpoint)

    async def session(client: Client) -> dict[str, Any]:
        tools = {tool.name: tool for tool in (await client.list_tools()).tools}
        adopted = await client.call_tool("adopt_checkpoint", {"descriptor": descriptor, "new_thread": "adopted"})
        return {"description": tools["adopt_checkpoint"].description, "adopted": adopted}

    out = talk(server("--thread", str(mine), "--blobs", str(blobs)), session)
    assert f"The new thread is made beside this server's thread, in {mine.parent};" in out["description"]
    assert f"handoff mcp --thread {mine.parent}/NEW_THREAD" in out["description"]
    assert not out["adopted"].is_error, text(out["adopted"])
    assert out["adopted"].structured_content["thread"] == str(mine.parent / "adopted")
    assert HandoffStore(mine.parent / "adopted").restore().handoff.lineage.adopted_from is not None
