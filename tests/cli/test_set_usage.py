"""``set`` with an argument that is not KEY=VALUE is a usage error: exit 2, with the command's usage.

Runs the CLI as a person's shell does (``python -m handoff_files``, this checkout).
"""

from __future__ import annotations

import json
from pathlib import Path

from tests.cli.shell import handoff


def test_an_argument_without_an_equals_sign_is_a_usage_error(tmp_path: Path, subprocess_env: dict[str, str]) -> None:
    content = tmp_path / "c.json"
    content.write_text(json.dumps({"narrative": "One save."}), encoding="utf-8")
    thread = tmp_path / "t1"
    assert handoff("save", thread, content, env=subprocess_env).returncode == 0
    done = handoff("set", thread, "state.data", env=subprocess_env)
    assert done.returncode == 2, done.stderr
    assert done.stderr.startswith("usage: handoff set"), done.stderr
    assert "'state.data' is not KEY=VALUE" in done.stderr
