"""The MCP server through the official MCP client, over a real stdio subprocess: tools, save, restore, acknowledge."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path
from typing import Any

import anyio
import pytest

from handoff_files import HandoffStore
from handoff_files.thread.journal import Journal
from tests.mcp_server.helpers import LAYERS, Client, server, talk, text


def test_the_tools_are_listed_with_typed_parameters_and_descriptions(thread_dir: Path) -> None:
    async def session(client: Client) -> Any:
        return client.server_info, client.instructions, (await client.list_tools()).tools

    info, instructions, tools = talk(server("--thread", str(thread_dir)), session)
    assert info.name == "handoff-files"
    assert "handoff_restore" in (instructions or "")
    by_name = {tool.name: tool for tool in tools}
    assert set(by_name) == {
        "handoff_save",
        "handoff_restore",
        "handoff_acknowledge",
        "handoff_history",
        "handoff_show",
        "handoff_threads",
        "handoff_checkpoint",
        "adopt_checkpoint",
    }
    for tool in tools:
        assert tool.description, tool.name
    save = by_name["handoff_save"].input_schema
    assert set(save["required"]) == {"narrative", "priorities"}
    assert "urgency" in json.dumps(save)  # the priority's fields are in the schema, not a free-form object
    assert by_name["handoff_restore"].annotations.read_only_hint is True
    assert by_name["handoff_save"].annotations.read_only_hint is False


def test_save_restore_acknowledge_and_history_through_the_client(thread_dir: Path) -> None:
    async def session(client: Client) -> dict[str, Any]:
        out = {"fresh": await client.call_tool("handoff_restore", {})}
        out["saved"] = await client.call_tool("handoff_save", LAYERS)
        out["restored"] = await client.call_tool("handoff_restore", {})
        code = out["restored"].structured_content["code"]
        out["acked"] = await client.call_tool("handoff_acknowledge", {"code": code})
        out["history"] = await client.call_tool("handoff_history", {})
        out["shown"] = await client.call_tool("handoff_show", {"generation": 1})
        return out

    out = talk(server("--thread", str(thread_dir)), session)
    assert out["fresh"].structured_content["generation"] == 0
    assert "Nothing was saved" in text(out["fresh"])
    assert not out["saved"].is_error, text(out["saved"])
    assert out["saved"].structured_content["generation"] == 1
    restored = out["restored"]
    briefing = text(restored)
    assert briefing.index("rerun the failing test") < briefing.index("port the CSV reader")
    assert restored.structured_content["briefing"] == briefing
    assert f"code {restored.structured_content['code']}" in briefing
    assert out["acked"].structured_content == {"thread": str(thread_dir), "generation": 1, "with_code": True}
    resumed, _ = Journal(thread_dir).last("resumed")
    assert resumed is not None
    assert resumed.extra["code"] == "right"
    assert [g["generation"] for g in out["history"].structured_content["generations"]] == [1]
    assert out["shown"].structured_content["handoff"]["narrative"] == LAYERS["narrative"]
    assert HandoffStore(thread_dir).restore().handoff.state.data == {"ported": 12}


def test_a_wrong_code_is_a_tool_error_and_is_journaled(thread_dir: Path) -> None:
    HandoffStore(thread_dir).save(LAYERS)

    async def session(client: Client) -> Any:
        return await client.call_tool("handoff_acknowledge", {"code": "AAAA-AAAA"})

    result = talk(server("--thread", str(thread_dir)), session)
    assert result.is_error
    assert "'AAAA-AAAA' is not the acknowledgement code of generation 1" in text(result)
    refused, _ = Journal(thread_dir).last("unacknowledged", "resumed")
    assert refused is not None
    assert refused.event == "unacknowledged"


def test_invalid_layers_come_back_as_errors_the_model_can_fix(thread_dir: Path) -> None:
    async def session(client: Client) -> list[Any]:
        return [
            await client.call_tool("handoff_save", {**LAYERS, "priorities": [{"task": "x", "urgency": "asap"}]}),
            await client.call_tool("handoff_save", {**LAYERS, "narrative": 42}),
            await client.call_tool("handoff_show", {"generation": 7}),
            await client.call_tool("handoff_history", {"thread": "another"}),
        ]

    urgency, narrative, missing, other = talk(server("--thread", str(thread_dir)), session)
    assert all(result.is_error for result in (urgency, narrative, missing, other))
    assert "urgency" in text(urgency)
    assert "narrative" in text(narrative)
    assert "no verified generation 7" in text(missing)
    assert "serves the one thread" in text(other)
    assert not (thread_dir / "handoff.json").exists()


@pytest.mark.slow  # make slow: two servers racing; the store's concurrency tests stay
def test_two_server_processes_saving_to_one_thread_lose_no_generation(thread_dir: Path) -> None:
    saves = 8

    async def writer(name: str, saved: list[int]) -> None:
        async with Client(server("--thread", str(thread_dir))) as client:
            for step in range(saves):
                layers = {**LAYERS, "narrative": f"{name} step {step}"}
                result = await client.call_tool("handoff_save", layers)
                assert not result.is_error, text(result)
                saved.append(result.structured_content["generation"])

    async def main() -> list[int]:
        saved: list[int] = []
        with anyio.fail_after(120):
            async with anyio.create_task_group() as group:
                group.start_soon(writer, "a", saved)
                group.start_soon(writer, "b", saved)
        return saved

    saved = anyio.run(main)
    assert sorted(saved) == list(range(1, 2 * saves + 1))  # every save its own generation, none reused
    history = HandoffStore(thread_dir, keep=100).history()
    assert {entry.generation for entry in history if entry.problem is None} >= set(range(2 * saves - 8, 2 * saves + 1))
    narratives = {HandoffStore(thread_dir).restore().handoff.narrative}
    assert narratives <= {f"{n} step {saves - 1}" for n in "ab"}


def test_a_root_server_works_on_named_threads_and_adopts_a_checkpoint(tmp_path: Path) -> None:
    root, blobs = tmp_path / "threads", tmp_path / "blobs"
    HandoffStore(root / "alpha").save(LAYERS)

    async def session(client: Client) -> dict[str, Any]:
        out = {"unnamed": await client.call_tool("handoff_restore", {})}
        out["escape"] = await client.call_tool("handoff_restore", {"thread": "../outside"})
        out["checkpoint"] = await client.call_tool("handoff_checkpoint", {"thread": "alpha", "to_agent": "beta"})
        descriptor = out["checkpoint"].structured_content["descriptor"]
        unhashed = {key: value for key, value in descriptor.items() if key != "blob_sha256"}
        out["unhashed"] = await client.call_tool("adopt_checkpoint", {"descriptor": unhashed, "new_thread": "beta-1"})
        out["adopted"] = await client.call_tool("adopt_checkpoint", {"descriptor": descriptor, "new_thread": "beta-1"})
        out["beta"] = await client.call_tool("handoff_restore", {"thread": "beta-1"})
        return out

    out = talk(server("--root", str(root), "--blobs", str(blobs)), session)
    assert out["unnamed"].is_error
    assert "name one with thread" in text(out["unnamed"])
    assert out["escape"].is_error
    assert "not a valid id" in text(out["escape"])
    assert not out["checkpoint"].is_error, text(out["checkpoint"])
    assert out["unhashed"].is_error
    assert "sha256" in text(out["unhashed"])
    assert not out["adopted"].is_error, text(out["adopted"])
    assert out["adopted"].structured_content["adopted_from"].startswith("alpha")
    assert "port the CSV reader" in text(out["beta"])
    assert HandoffStore(root / "beta-1").restore().handoff.lineage.adopted_from is not None


def test_without_the_sdk_handoff_mcp_says_what_to_install_in_one_line(
    tmp_path: Path, thread_dir: Path, python: str, subprocess_env: dict[str, str]
) -> None:
    # an interpreter without the [mcp] extra, made here by putting a package named mcp that cannot
    # be imported first on the path (this venv has the real SDK, as the test extras install it)
    shadow = tmp_path / "no-sdk" / "mcp"
    shadow.mkdir(parents=True)
    (shadow / "__init__.py").write_text("raise ImportError(\"No module named 'mcp'\")\n")
    subprocess_env["PYTHONPATH"] = f"{shadow.parent}:{subprocess_env['PYTHONPATH']}"
    done = subprocess.run(
        [python, "-m", "handoff_files", "mcp", "--thread", str(thread_dir)],
        env=subprocess_env,
        capture_output=True,
        text=True,
        check=False,
        stdin=subprocess.DEVNULL,
    )
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1
    assert "pip install 'handoff-files[mcp]'" in done.stderr
    assert "Traceback" not in done.stderr


def test_importing_handoff_files_never_imports_the_sdk(python: str, subprocess_env: dict[str, str]) -> None:
    code = (
        "import sys, handoff_files; handoff_files.brief; print(sorted(m for m in sys.modules if m.startswith('mcp')))"
    )
    done = subprocess.run([python, "-c", code], env=subprocess_env, capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"


def test_a_budget_too_small_for_the_thread_says_which_it_needs(tmp_path: Path) -> None:
    thread = tmp_path / ("long-" * 40) / "thread-1"
    HandoffStore(thread).save(LAYERS)

    async def session(client: Client) -> Any:
        return await client.call_tool("handoff_restore", {"budget": 1000})

    result = talk(server("--thread", str(thread)), session)
    assert result.is_error
    assert "needs a budget of at least" in text(result)


@pytest.mark.parametrize(
    "occupied", [pytest.param(False, id="empty-elsewhere"), pytest.param(True, id="unrelated-folder")]
)
def test_a_link_planted_under_the_root_is_refused_and_nothing_is_written_through_it(
    tmp_path: Path, *, occupied: bool
) -> None:
    # issue 20 item 8: R/link -> /elsewhere, handoff_save thread="link" wrote into /elsewhere
    root, blobs, outside = tmp_path / "threads", tmp_path / "blobs", tmp_path / "elsewhere"
    HandoffStore(root / "alpha").save(LAYERS)
    outside.mkdir()
    if occupied:
        (outside / "sentinel.txt").write_text("keep me\n")
    (root / "link").symlink_to(outside)
    before = sorted(outside.iterdir())

    async def session(client: Client) -> dict[str, Any]:
        save = {key: LAYERS[key] for key in ("narrative", "priorities")}
        out = {"save": await client.call_tool("handoff_save", {**save, "thread": "link"})}
        out["restore"] = await client.call_tool("handoff_restore", {"thread": "link"})
        out["acknowledge"] = await client.call_tool("handoff_acknowledge", {"code": "x", "thread": "link"})
        descriptor = (await client.call_tool("handoff_checkpoint", {"thread": "alpha"})).structured_content
        assert descriptor is not None
        arguments = {"descriptor": descriptor["descriptor"], "new_thread": "link"}
        out["adopt"] = await client.call_tool("adopt_checkpoint", arguments)
        return out

    out = talk(server("--root", str(root), "--blobs", str(blobs)), session)
    for tool, result in out.items():
        assert result.is_error, tool
        assert f"{root / 'link'}: is a symbolic link" in text(result), (tool, text(result))
    assert sorted(outside.iterdir()) == before
    if occupied:
        assert (outside / "sentinel.txt").read_text() == "keep me\n"


def test_restore_and_history_say_who_signed_the_generation(
    thread_dir: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from handoff_files.signing.keys import allowed_signers_line, create_key

    key = create_key(tmp_path / "key")
    HandoffStore(thread_dir, signing_key=key).save(LAYERS)
    trust = tmp_path / "allowed_signers"
    trust.write_text(allowed_signers_line(key, "alice@example.com") + "\n", encoding="utf-8")
    monkeypatch.setenv("HANDOFF_FILES_ALLOWED_SIGNERS", str(trust))

    async def session(client: Client) -> dict[str, Any]:
        return {
            "restored": await client.call_tool("handoff_restore", {}),
            "history": await client.call_tool("handoff_history", {}),
        }

    out = talk(server("--thread", str(thread_dir)), session)
    assert text(out["restored"]).startswith("# Handoff briefing (signed by alice@example.com): ")
    [generation] = out["history"].structured_content["generations"]
    assert generation["signed"] == f"signed by alice@example.com ({key.fingerprint})"
