"""`handoff init --format yaml` is kept by the next save; errors speak of the command's flags, not Python keywords."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from handoff_files import HandoffStore
from handoff_files.cli.main import main
from tests.cli.test_cli import CONTENT, one_error_line


@pytest.fixture
def content_file(tmp_path: Path) -> Path:
    path = tmp_path / "c.json"
    path.write_text(json.dumps(CONTENT), encoding="utf-8")
    return path


def test_the_format_init_chose_is_kept_by_the_next_save(tmp_path: Path, content_file: Path) -> None:
    thread = tmp_path / "e2"
    assert main(["init", "--format", "yaml", str(thread)]) == 0
    assert main(["save", str(thread), str(content_file)]) == 0
    assert (thread / "handoff.yaml").is_file()
    assert not (thread / "handoff.json").exists()
    assert HandoffStore(thread).format == "yaml"
    assert HandoffStore(thread).restore().handoff.narrative == CONTENT["narrative"]


def test_a_thread_inited_without_a_format_stays_json(tmp_path: Path, content_file: Path) -> None:
    thread = tmp_path / "e1"
    assert main(["init", str(thread)]) == 0
    assert not (thread / "journal.jsonl").exists()  # nothing chosen, nothing recorded
    assert main(["save", str(thread), str(content_file)]) == 0
    assert (thread / "handoff.json").is_file()


def test_asking_for_the_other_format_names_the_flag_not_a_keyword(
    tmp_path: Path, content_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    thread = tmp_path / "e2"
    main(["init", "--format", "yaml", str(thread)])
    main(["save", str(thread), str(content_file)])
    capsys.readouterr()
    assert main(["save", "--format", "json", str(thread), str(content_file)]) == 1
    err = capsys.readouterr().err
    one_error_line(err, "the thread's primary is YAML, not JSON")
    assert "format=" not in err


@pytest.mark.parametrize(
    ("argv", "flag"),
    [
        (["run", "T", "--max-restarts", "-1", "--", "true"], "--max-restarts"),
        (["run", "T", "--ack-timeout", "nan", "--", "true"], "--ack-timeout"),
        (["run", "T", "--ack-timeout", "0", "--", "true"], "--ack-timeout"),
        (["inbox", "I", "request", "--from", "a b", "--to", "beta", "--reason", "r"], "--from"),
        (["inbox", "I", "request", "--from", "alpha", "--to", "../x", "--reason", "r"], "--to"),
        (
            ["inbox", "I", "request", "--from", "alpha", "--to", "beta", "--reason", "r", "--timeout", "inf"],
            "--timeout",
        ),
        (["export", "T", "--generation", "0"], "--generation"),
    ],
)
def test_bad_arguments_are_usage_errors_naming_the_flag(
    argv: list[str], flag: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert f"argument {flag}" in err
    assert "_" not in err.splitlines()[-1].split(":", 2)[-1].split("'")[0]  # no Python keyword in the reason


def test_a_request_with_no_target_and_no_registry_names_the_flags(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    argv = ["inbox", str(tmp_path / "inbox"), "request", "--from", "alpha", "--reason", "help"]
    assert main(argv) == 1
    err = capsys.readouterr().err
    one_error_line(err, "name the agent asked with --to", "--registry")
    assert "to_agent" not in err


def test_a_folder_name_that_is_not_an_id_gives_ids_made_from_it_or_the_ones_given(
    tmp_path: Path, content_file: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["save", str(tmp_path / "Café notes"), str(content_file)]) == 0
    assert "the ids were made from it: 'Cafe-notes'" in capsys.readouterr().out
    assert HandoffStore(tmp_path / "Café notes").restore().handoff.thread_id == "Cafe-notes"
    assert main(["save", str(tmp_path / "my thread"), str(content_file), "--thread-id", "mine"]) == 0
    handoff = HandoffStore(tmp_path / "my thread").restore().handoff
    assert (handoff.agent_id, handoff.thread_id) == ("mine", "mine")
