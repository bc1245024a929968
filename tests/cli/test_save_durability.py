"""``handoff save --durability``: the commit point a person chooses, seen in the journal it leaves."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.shell import handoff


def _events(thread: Path) -> list[tuple[str, str | None]]:
    lines = (json.loads(line) for line in (thread / "journal.jsonl").read_text().splitlines())
    return [(line["event"], line.get("durability")) for line in lines if line["event"] != "created"]


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        ((), [("document", None), ("saved", "journal")]),
        (("--durability", "journal"), [("document", None), ("saved", "journal")]),
        # the generation's own file is the commit point: the journal holds only its summary line
        (("--durability", "full"), [("saved", None)]),
    ],
)
def test_save_commits_where_the_person_says(
    tmp_path: Path, subprocess_env: dict[str, str], argv: tuple[str, ...], expected: list[tuple[str, str | None]]
) -> None:
    content = tmp_path / "c.json"
    content.write_text('{"narrative": "Ported the importer. Next: test it."}')
    done = handoff("save", tmp_path / "t", content, *argv, env=subprocess_env)
    assert done.returncode == 0, done.stderr
    assert _events(tmp_path / "t") == expected
    shown = handoff("show", tmp_path / "t", env=subprocess_env)
    assert "Ported the importer" in shown.stdout


def test_an_unknown_durability_is_a_usage_error(tmp_path: Path, subprocess_env: dict[str, str]) -> None:
    done = handoff("save", tmp_path / "t", "-", "--durability", "fast", env=subprocess_env, stdin="{}")
    assert done.returncode == 2
    assert "invalid choice: 'fast'" in done.stderr
    assert not (tmp_path / "t").exists()
