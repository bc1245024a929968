"""``save`` into a path that is a file says THREAD must be a folder, not "cannot create the thread directory".

Runs the CLI as a person's shell does (``python -m handoff_files``, this checkout).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.shell import handoff


@pytest.mark.parametrize(
    "target", [pytest.param("c.json", id="the-content-file"), pytest.param("t1/handoff.json", id="a-primary")]
)
def test_save_into_a_file_says_thread_must_be_a_folder(
    tmp_path: Path, subprocess_env: dict[str, str], target: str
) -> None:
    content = tmp_path / "c.json"
    content.write_text(json.dumps({"narrative": "One save."}), encoding="utf-8")
    assert handoff("save", tmp_path / "t1", content, env=subprocess_env).returncode == 0
    done = handoff("save", tmp_path / target, content, env=subprocess_env)
    assert done.returncode == 1
    assert "File exists" not in done.stderr, done.stderr
    assert "is not a directory: give the thread's directory" in done.stderr, done.stderr
    assert "Traceback" not in done.stderr


def test_a_field_not_allowed_is_blamed_on_the_file_that_holds_it(
    tmp_path: Path, subprocess_env: dict[str, str]
) -> None:
    content = tmp_path / "f.json"
    content.write_text(json.dumps({"narrative": "One save.", "foo": 1}), encoding="utf-8")
    done = handoff("save", tmp_path / "t1", content, env=subprocess_env)
    assert done.returncode == 1
    assert done.stderr.startswith(f"handoff: {content}: not valid handoff content: foo:"), done.stderr
    assert not (tmp_path / "t1").exists()
