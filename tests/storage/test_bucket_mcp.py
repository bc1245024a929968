"""``handoff mcp --root s3://…`` and ``--thread s3://…``: the official MCP client over stdio, on SeaweedFS."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from handoff_files import HandoffStore
from handoff_files.cli.main import main
from tests.mcp_server.helpers import LAYERS, Client, server, talk, text


def test_a_root_server_on_a_bucket_saves_lists_restores_acknowledges_and_shows(bucket_url: str, tmp_path: Path) -> None:
    HandoffStore(f"{bucket_url}/alpha").save(LAYERS)

    async def session(client: Client) -> dict[str, Any]:
        out = {"saved": await client.call_tool("handoff_save", {**LAYERS, "thread": "beta"})}
        out["threads"] = await client.call_tool("handoff_threads", {})
        out["restore"] = await client.call_tool("handoff_restore", {"thread": "alpha"})
        code = re.search(r"[A-Z0-9]{4}-[A-Z0-9]{4}", text(out["restore"]))
        assert code is not None, text(out["restore"])
        out["ack"] = await client.call_tool("handoff_acknowledge", {"thread": "alpha", "code": code.group()})
        out["history"] = await client.call_tool("handoff_history", {"thread": "beta"})
        out["show"] = await client.call_tool("handoff_show", {"thread": "alpha", "generation": 1})
        out["escape"] = await client.call_tool("handoff_restore", {"thread": "../outside"})
        out["export"] = await client.call_tool("handoff_checkpoint", {"thread": "alpha"})
        return out

    out = talk(server("--root", bucket_url, "--blobs", str(tmp_path / "blobs")), session)
    for name in ("saved", "threads", "restore", "ack", "history", "show"):
        assert not out[name].is_error, (name, text(out[name]))
    assert out["saved"].structured_content["thread"] == f"{bucket_url}/beta"
    listed = out["threads"].structured_content
    assert listed["root"] == bucket_url
    assert [(t["name"], t["generation"], t["problem"]) for t in listed["threads"]] == [
        ("alpha", 1, None),
        ("beta", 1, None),
    ]
    assert "port the CSV reader" in text(out["restore"])
    assert out["ack"].structured_content["with_code"] is True
    assert [g["generation"] for g in out["history"].structured_content["generations"]] == [1]
    assert out["show"].structured_content["handoff"]["narrative"] == LAYERS["narrative"]
    assert out["escape"].is_error
    assert "not a valid id" in text(out["escape"])
    assert out["export"].is_error  # a folder's thread only, said so
    assert "not on object storage" in text(out["export"])
    assert HandoffStore(f"{bucket_url}/beta").restore().handoff.narrative == LAYERS["narrative"]


def test_a_one_thread_server_on_a_bucket(bucket_url: str) -> None:
    thread = f"{bucket_url}/solo"

    async def session(client: Client) -> dict[str, Any]:
        out = {"saved": await client.call_tool("handoff_save", LAYERS)}
        out["other"] = await client.call_tool("handoff_restore", {"thread": "another"})
        out["restore"] = await client.call_tool("handoff_restore", {})
        return out

    out = talk(server("--thread", thread), session)
    assert not out["saved"].is_error, text(out["saved"])
    assert out["other"].is_error
    assert "serves the one thread 'solo'" in text(out["other"])
    assert "port the CSV reader" in text(out["restore"])
    assert HandoffStore(thread).restore().generation == 1


def test_a_thread_at_the_bucket_itself_is_refused_in_one_line(
    test_bucket: str, aws_env: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["mcp", "--thread", f"s3://{test_bucket}"]) == 1
    err = capsys.readouterr().err
    assert err == (
        f"handoff: s3://{test_bucket}: a thread on a bucket is a prefix in it: --thread s3://BUCKET/THREAD "
        "(or --root s3://BUCKET)\n"
    )
