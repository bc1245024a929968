"""Content a person wrote by hand and the model refuses: our words (where, what was expected, what was found)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.shell import handoff


@pytest.mark.parametrize(
    ("content", "said"),
    [
        pytest.param(
            {"warnings": ["dates are local time"]},
            'warnings.0: expected a mapping with text (and optionally severity), found the text "dates are local time"',
            id="warning-as-text",
        ),
        pytest.param(
            {"priorities": [{"task": "port it", "urgency": "soon"}]},
            "priorities.0.urgency: expected one of 'first', 'primary', 'after_primary' or 'if_time_permits', "
            'found the text "soon"',
            id="unknown-urgency",
        ),
        pytest.param(
            {"state": {"active_tasks": "port it"}},
            'state.active_tasks: expected a list, found the text "port it"',
            id="text-for-a-list",
        ),
        pytest.param(
            {"warnings": [{"txt": "dates"}]},
            "warnings.0.text: expected a value (the field is required), found none",
            id="missing-field",
        ),
        pytest.param(
            {"state": {"energy_level": 5}},
            "state.energy_level: expected a number of at most 1.0, found the number 5",
            id="out-of-range",
        ),
    ],
)
def test_refused_content_says_where_what_was_expected_and_what_was_found(
    tmp_path: Path, subprocess_env: dict[str, str], content: dict[str, object], said: str
) -> None:
    (tmp_path / "c.json").write_text(json.dumps(content), encoding="utf-8")
    done = handoff("save", tmp_path / "t1", tmp_path / "c.json", env=subprocess_env)
    assert done.returncode == 1
    assert done.stderr.count("\n") == 1, done.stderr
    assert said in done.stderr, done.stderr
    assert "Input should be" not in done.stderr
    assert "Field required" not in done.stderr


def test_a_hand_written_yaml_warning_list_of_text_is_refused_in_our_words(
    tmp_path: Path, subprocess_env: dict[str, str]
) -> None:
    (tmp_path / "c.yaml").write_text('narrative: x\nwarnings: ["text"]\n', encoding="utf-8")
    done = handoff("save", tmp_path / "t1", tmp_path / "c.yaml", env=subprocess_env)
    assert done.returncode == 1
    assert 'warnings.0: expected a mapping with text (and optionally severity), found the text "text"' in done.stderr


def test_a_hand_edited_primary_with_a_warning_as_text_is_refused_in_our_words_by_validate_and_show(
    tmp_path: Path, subprocess_env: dict[str, str]
) -> None:
    (tmp_path / "c.json").write_text(json.dumps({"narrative": "x"}), encoding="utf-8")
    assert handoff("save", tmp_path / "t1", tmp_path / "c.json", env=subprocess_env).returncode == 0
    primary = tmp_path / "t1" / "handoff.json"
    document = json.loads(primary.read_text(encoding="utf-8"))
    document["warnings"] = ["text"]  # a person's edit of the file itself, not content given to save
    primary.write_text(json.dumps(document, indent=2), encoding="utf-8")
    for command in ("validate", "show"):
        done = handoff(command, primary, env=subprocess_env)
        assert done.returncode == 1, (command, done.stdout)
        said = 'warnings.0: expected a mapping with text (and optionally severity), found the text "text"'
        assert said in done.stderr, (command, done.stderr)
        assert "Input should be" not in done.stderr, (command, done.stderr)
