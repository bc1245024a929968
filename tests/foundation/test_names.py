"""The folder-name rule a thread named under a root follows (an MCP server's ``--root``, a LangGraph saver's root)."""

from __future__ import annotations

import pytest

from handoff_files.foundation.errors import InvalidNameError
from handoff_files.foundation.names import check_folder_name, is_folder_name
from handoff_files.langgraph.layout import folder_name


@pytest.mark.parametrize(
    ("name", "ok"),
    [
        pytest.param("caps", True, id="lower-case"),
        pytest.param("beta-1.x_y", True, id="punctuation"),
        pytest.param("9lives", True, id="digit-first"),
        pytest.param("a" * 64, True, id="64-characters"),
        pytest.param("CAPS", False, id="upper-case"),
        pytest.param("Alpha", False, id="one-capital"),
        pytest.param("a" * 65, False, id="65-characters"),
        pytest.param("../outside", False, id="a-path"),
        pytest.param(".hidden", False, id="dot-first"),
        pytest.param("", False, id="empty"),
        pytest.param("x y", False, id="space"),
    ],
)
def test_one_rule_for_the_mcp_servers_thread_names_and_the_savers_folders(name: str, *, ok: bool) -> None:
    assert is_folder_name(name) is ok
    assert (folder_name(name) == name) is ok  # the saver keeps exactly these names as they are


def test_a_name_with_capitals_is_refused_with_the_lower_case_name_to_use() -> None:
    with pytest.raises(InvalidNameError) as refused:
        check_folder_name("CAPS", "thread", "/root")
    assert str(refused.value).startswith("/root: thread 'CAPS' is not a valid id for a folder under the root")
    assert "('caps', say)" in str(refused.value)
    with pytest.raises(InvalidNameError) as refused:
        check_folder_name("../x", "thread", "/root")
    assert "say)" not in str(refused.value)
    assert check_folder_name("caps", "thread", "/root") == "caps"
