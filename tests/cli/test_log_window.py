"""``log`` with a window no line falls in says so, and how many lines the journal holds: never "empty".

Runs the CLI as a person's shell does (``python -m handoff_files``, this checkout).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.shell import handoff


@pytest.mark.parametrize(
    "window",
    [pytest.param(["-n", "0"], id="no-lines"), pytest.param(["--since", "2030-01-01"], id="since-the-future")],
)
def test_a_window_no_line_falls_in_is_not_an_empty_journal(
    tmp_path: Path, subprocess_env: dict[str, str], window: list[str]
) -> None:
    content = tmp_path / "c.json"
    content.write_text(json.dumps({"narrative": "Two saves."}), encoding="utf-8")
    thread = tmp_path / "t1"
    for _ in range(2):
        assert handoff("save", thread, content, env=subprocess_env).returncode == 0
    done = handoff("log", thread, *window, env=subprocess_env)
    assert done.returncode == 0, done.stderr
    assert "empty" not in done.stdout
    assert done.stdout == "(no line matches: the journal holds 2 lines)\n"
