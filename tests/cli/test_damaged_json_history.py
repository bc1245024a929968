"""A damaged ``.json`` history file is reported as invalid JSON, never as invalid YAML.

Runs the CLI as a person's shell does (``python -m handoff_files``, this checkout) on a thread
whose history copy of generation 2 had its first byte flipped (``{`` to ``;``).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.shell import handoff


@pytest.fixture
def damaged(tmp_path: Path, subprocess_env: dict[str, str]) -> Path:
    """A thread saved twice whose ``history/00000002.json`` begins with ``;`` instead of ``{``."""
    content = tmp_path / "c.json"
    content.write_text(json.dumps({"narrative": "Two saves.", "state": {"error_count": 0}}), encoding="utf-8")
    thread = tmp_path / "t1"
    for _ in range(2):
        assert handoff("save", thread, content, env=subprocess_env).returncode == 0
    copy = thread / "history" / "00000002.json"
    data = copy.read_bytes()
    assert data.startswith(b"{")
    copy.chmod(0o600)
    copy.write_bytes(b";" + data[1:])
    return thread


@pytest.mark.parametrize(
    "argv",
    [
        pytest.param(["history"], id="history"),
        pytest.param(["doctor"], id="doctor"),
        pytest.param(["show", "--generation", "2"], id="show-generation"),
    ],
)
def test_a_damaged_json_history_file_is_invalid_json(
    damaged: Path, subprocess_env: dict[str, str], argv: list[str]
) -> None:
    done = handoff(argv[0], damaged, *argv[1:], env=subprocess_env)
    said = done.stdout + done.stderr
    assert "Traceback" not in said
    assert "invalid JSON" in said, said
    assert "invalid YAML" not in said, said
