"""Error and note wording as a person reads it: no doubled words, no parser's advice, no Python bytes reprs."""

from __future__ import annotations

from pathlib import Path

import pytest

from handoff_files import HandoffStore
from tests.cli.shell import handoff


@pytest.mark.parametrize(
    ("content", "needle"),
    [
        pytest.param('{"narrative": "unterminated', "Unterminated string starting at line 1", id="unterminated"),
        pytest.param('{"narrative": "a\tb"}', "Invalid control character at line 1", id="control-character"),
    ],
)
def test_json_errors_say_at_once(tmp_path: Path, subprocess_env: dict[str, str], content: str, needle: str) -> None:
    (tmp_path / "content.json").write_text(content, encoding="utf-8")
    done = handoff("save", tmp_path / "t1", tmp_path / "content.json", env=subprocess_env)
    assert done.returncode == 1
    assert needle in done.stderr, done.stderr
    assert " at at " not in done.stderr, done.stderr


def test_yaml_errors_give_the_problem_and_where_without_ruamels_advice(
    tmp_path: Path, subprocess_env: dict[str, str]
) -> None:
    (tmp_path / "content.yaml").write_text("narrative: one\nnarrative: two\n", encoding="utf-8")
    done = handoff("save", tmp_path / "t1", tmp_path / "content.yaml", env=subprocess_env)
    assert done.returncode == 1
    assert 'found duplicate key "narrative"' in done.stderr
    assert "at line 2, column 1" in done.stderr, done.stderr
    for noise in ("To suppress", "yaml.dev", "<unicode string>"):
        assert noise not in done.stderr, done.stderr


def test_a_damaged_journal_line_is_quoted_as_text_not_as_python_bytes(
    tmp_path: Path, subprocess_env: dict[str, str]
) -> None:
    thread = tmp_path / "t1"
    HandoffStore(thread).save({"narrative": "Ported half the importer."})
    with (thread / "journal.jsonl").open("ab") as journal:
        journal.write(b'{"at": "2026-11-23", "event": "saved", \xff damaged by Zo\xc3\xab}\n')
    done = handoff("show", thread, env=subprocess_env)
    assert done.returncode == 0, done.stderr
    [note] = [line for line in done.stdout.splitlines() if "damaged line" in line]
    assert "b'" not in note, note
    assert '{"at": "2026-11-23", "event": "saved", \\xff damaged by Zoë}' in note, note
