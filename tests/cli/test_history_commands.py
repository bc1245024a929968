"""``handoff diff``, ``show --generation``, ``log -n/--since/--follow``: real threads, through library and CLI."""

from __future__ import annotations

import argparse
import datetime as dt
import json
import pickle
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from handoff_files import HandoffStore
from handoff_files.cli import commands_history
from handoff_files.cli.commands import cmd_log, cmd_show
from handoff_files.cli.commands_history import cmd_diff, since
from handoff_files.cli.main import main
from handoff_files.foundation.errors import ChecksumMismatchError, HandoffError, NoHandoffError
from handoff_files.thread.history import GenerationNotFoundError, diff_generations, load_generation, recent
from handoff_files.thread.journal import Entry
from tests.cli.shell import handoff, machine
from tests.cli.test_json_schemas import check

FIRST = {"narrative": "Ported half the importer.", "priorities": [{"task": "port it", "urgency": "first"}]}
SECOND = {"narrative": "Ported most of the importer.", "priorities": [{"task": "port it", "urgency": "first"}]}


@pytest.fixture
def thread(thread_dir: Path) -> Path:
    """A thread with two generations whose narratives differ (and whose priorities do not)."""
    store = HandoffStore(thread_dir)
    store.save(FIRST)
    store.save(SECOND)
    return thread_dir


def _args(**values: Any) -> argparse.Namespace:
    """The namespace the parser would give a handler (``json`` off unless said)."""
    return argparse.Namespace(**{"json": False, **values})


# -- the library --------------------------------------------------------------------------------


def test_load_generation_reads_a_kept_generation_verified(thread: Path) -> None:
    assert load_generation(HandoffStore(thread).layout, 1).narrative == FIRST["narrative"]


def test_a_pruned_generation_is_an_error_naming_it_and_history(thread: Path) -> None:
    layout = HandoffStore(thread).layout
    (layout.history_dir / "00000001.json").unlink()
    with pytest.raises(GenerationNotFoundError, match="no generation 1: pruned") as caught:
        load_generation(layout, 1)
    assert caught.value.path == str(layout.history_dir)
    assert caught.value.generation == 1
    again = pickle.loads(pickle.dumps(caught.value))
    assert (again.generation, str(again)) == (1, str(caught.value))


def test_a_generation_not_yet_written_says_which_is_the_newest(thread: Path) -> None:
    with pytest.raises(GenerationNotFoundError, match="no generation 9: the newest is 2"):
        load_generation(HandoffStore(thread).layout, 9)


def test_a_damaged_generation_keeps_the_loaders_kind_and_names_the_generation(thread: Path) -> None:
    path = thread / "history" / "00000001.json"
    path.write_text(path.read_text(encoding="utf-8").replace("half", "hale"), encoding="utf-8")
    with pytest.raises(ChecksumMismatchError, match="generation 1 does not verify") as caught:
        load_generation(HandoffStore(thread).layout, 1)
    assert caught.value.path == str(path)


def test_diff_defaults_to_the_newest_generation_and_the_one_before(thread: Path) -> None:
    diff = diff_generations(HandoffStore(thread).layout)
    assert (diff.before, diff.after, diff.changed) == (1, 2, True)
    assert '-  "narrative": "Ported half the importer.",' in diff.text
    assert '+  "narrative": "Ported most of the importer.",' in diff.text
    assert "port it" not in diff.text.split("@@")[0]  # only the header before the hunk


def test_diff_of_generation_1_reads_every_layer_as_added(thread_dir: Path) -> None:
    HandoffStore(thread_dir).save(FIRST)
    diff = diff_generations(HandoffStore(thread_dir).layout)
    assert (diff.before, diff.after) == (None, 1)
    assert all(not line.startswith("-") or line.startswith("---") for line in diff.text.splitlines())


def test_diff_of_unchanged_layers_is_empty(thread_dir: Path) -> None:
    store = HandoffStore(thread_dir)
    store.save(FIRST)
    store.save(FIRST)
    diff = diff_generations(store.layout)
    assert (diff.text, diff.changed) == ("", False)


def test_diff_of_a_thread_with_no_generation_is_no_handoff(thread_dir: Path) -> None:
    HandoffStore(thread_dir).init()
    with pytest.raises(NoHandoffError, match="no generation to compare"):
        diff_generations(HandoffStore(thread_dir).layout)


def _entry(at: str, event: str = "saved") -> Entry:
    return Entry(event, at, None, None, event, {})


def test_recent_keeps_the_last_lines_a_document_line_going_with_its_save() -> None:
    entries = [
        _entry("2026-01-01T00:00:00.000Z"),
        _entry("2026-01-01T00:00:01.000Z", "document"),
        _entry("2026-01-01T00:00:01.000Z"),
    ]
    assert recent(entries, last=1) == entries[1:]
    assert recent(entries, last=2) == entries
    assert recent(entries, last=5) == entries
    assert recent(entries, last=0) == []


def test_recent_since_keeps_the_lines_at_or_after_the_time() -> None:
    entries = [_entry("2026-01-01T00:00:00.000Z"), _entry("2026-01-02T00:00:00.000Z"), _entry("not a time")]
    cut = dt.datetime(2026, 1, 2, tzinfo=dt.UTC)
    assert recent(entries, since=cut) == [entries[1]]
    assert recent(entries, since=cut, last=0) == []


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param("2026-05-01T14:00:00Z", dt.datetime(2026, 5, 1, 14, tzinfo=dt.UTC), id="utc"),
        pytest.param("2026-05-01T16:00+02:00", dt.datetime(2026, 5, 1, 14, tzinfo=dt.UTC), id="offset"),
        pytest.param("2026-05-01", dt.datetime(2026, 5, 1, tzinfo=dt.UTC), id="date-is-utc"),
    ],
)
def test_since_reads_iso_8601_times_as_utc_unless_they_say(text: str, expected: dt.datetime) -> None:
    assert since(text) == expected


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        pytest.param(text, seconds, id=text)
        for text, seconds in [("30s", 30), ("10m", 600), ("1.5h", 5400), ("1d", 86400)]
    ],
)
def test_since_reads_a_duration_back_from_now(text: str, seconds: int) -> None:
    moment = since(text)
    ago = (dt.datetime.now(dt.UTC) - moment).total_seconds()
    assert seconds <= ago < seconds + 5


@pytest.mark.parametrize(
    "text",
    [
        pytest.param("yesterday", id="a-word"),
        pytest.param("10x", id="unknown-unit"),
        pytest.param("-1h", id="negative"),
        pytest.param("", id="empty"),
        pytest.param("99999999999999d", id="too-far-back"),
    ],
)
def test_since_refuses_what_it_cannot_read(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match="ISO 8601 time"):
        since(text)


# -- the handlers, as the parser calls them -----------------------------------------------------


def test_cmd_diff_prints_the_diff_for_a_person_and_json_for_a_program(thread: Path) -> None:
    text = cmd_diff(_args(dir=str(thread), before=None, after=None))
    assert text.startswith("--- generation 1\n+++ generation 2\n")
    document = json.loads(cmd_diff(_args(dir=str(thread), before=2, after=1, json=True)))
    check(document, "diff")
    assert (document["from"], document["to"], document["changed"]) == (2, 1, True)
    assert document["diff"].startswith("--- generation 2\n")


def test_cmd_diff_says_when_the_layers_are_the_same(thread: Path) -> None:
    assert "the layers are the same" in cmd_diff(_args(dir=str(thread), before=2, after=2))
    first = json.loads(cmd_diff(_args(dir=str(thread), before=1, after=1, json=True)))
    assert (first["diff"], first["changed"]) == ("", False)


def test_cmd_diff_json_of_generation_1_has_no_from(thread_dir: Path) -> None:
    HandoffStore(thread_dir).save(FIRST)
    document = json.loads(cmd_diff(_args(dir=str(thread_dir), before=None, after=None, json=True)))
    check(document, "diff")
    assert document["from"] is None


_SHOW = {"assume_version": None, "require_signed": False, "accept_rollback": False}  # show's other options


def test_cmd_show_generation_shows_that_generation_from_history(thread: Path) -> None:
    args = _args(path=str(thread), generation=1, **_SHOW, json=True)
    document = json.loads(cmd_show(args))
    check(document, "show")
    assert (document["source"], document["handoff"]["generation"]) == ("history", 1)
    assert document["path"] == str(thread / "history" / "00000001.json")
    assert "Ported half" in cmd_show(_args(path=str(thread), generation=1, **_SHOW))


def test_cmd_show_generation_that_was_pruned_is_an_error(thread: Path) -> None:
    (thread / "history" / "00000001.json").unlink()
    with pytest.raises(GenerationNotFoundError, match="generation 1"):
        cmd_show(_args(path=str(thread), generation=1, **_SHOW))


def _log_args(thread: Path, **values: Any) -> argparse.Namespace:
    return _args(dir=str(thread), **{"lines": None, "since": None, "follow": False, **values})


def test_cmd_log_shows_the_last_lines_and_those_since_a_time(thread: Path) -> None:
    everything = json.loads(cmd_log(_log_args(thread, json=True)))["entries"]
    last = json.loads(cmd_log(_log_args(thread, json=True, lines=1)))
    check(last, "log")
    # the last line, a journal-first save's, comes with the document line it commits (not counted as a line)
    assert [entry["event"] for entry in last["entries"]] == ["document", "saved"]
    assert last["entries"] == everything[-2:]
    assert cmd_log(_log_args(thread, lines=1)).count("\n") == 1
    future = json.loads(cmd_log(_log_args(thread, json=True, since=since("2999-01-01"))))
    assert future["entries"] == []
    assert json.loads(cmd_log(_log_args(thread, json=True, since=since("1h"))))["entries"] == everything


def test_follow_prints_new_lines_as_they_are_written_until_ctrl_c(
    thread: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    looks = []

    def sleep(_: float) -> None:  # the first look finds a new save; the second is a person's Ctrl-C
        looks.append(1)
        if len(looks) == 1:
            HandoffStore(thread).save({"narrative": "Ported all of the importer."})
        else:
            raise KeyboardInterrupt

    monkeypatch.setattr(commands_history, "time", SimpleNamespace(sleep=sleep))
    with pytest.raises(KeyboardInterrupt):  # main() turns it into exit 130, as for every command
        cmd_log(_log_args(thread, lines=1, follow=True))
    out = capsys.readouterr().out.splitlines()
    assert len(out) == 2
    assert "gen 2" in out[0]
    assert "gen 3" in out[1]
    assert "Ported all" in out[1]


def test_follow_has_no_json(thread: Path) -> None:
    with pytest.raises(HandoffError, match="has no --json"):
        cmd_log(_log_args(thread, follow=True, json=True))


# -- through main() and `python -m handoff_files` (once cli/main.py is wired) ---------------------


def test_diff_and_its_arguments_through_main(thread: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["diff", str(thread)]) == 0
    assert "+++ generation 2" in capsys.readouterr().out
    assert main(["diff", str(thread), "3"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1
    assert "history: holds no generation 3: the newest is 2" in err
    with pytest.raises(SystemExit) as usage:
        main(["diff", str(thread), "0"])
    assert usage.value.code == 2


def test_show_generation_and_log_options_through_main(thread: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["show", str(thread), "--generation", "1"]) == 0
    assert "Ported half" in capsys.readouterr().out
    assert main(["log", str(thread), "-n", "1", "--since", "10m"]) == 0
    assert capsys.readouterr().out.count("\n") == 1
    with pytest.raises(SystemExit) as usage:
        main(["log", str(thread), "--since", "yesterday"])
    assert usage.value.code == 2


def test_python_m_diff_prints_the_change(thread: Path, subprocess_env: dict[str, str]) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "handoff_files", "diff", str(thread), "1", "2", "--json"],
        env=subprocess_env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["changed"] is True


def test_python_m_log_follow_prints_a_new_save_and_exits_130_on_ctrl_c(
    thread: Path, subprocess_env: dict[str, str]
) -> None:
    argv = [sys.executable, "-m", "handoff_files", "log", str(thread), "-n", "0", "--follow"]
    with subprocess.Popen(argv, env=subprocess_env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) as child:
        try:
            time.sleep(1.5)  # started, and looked at the journal once
            HandoffStore(thread).save({"narrative": "Ported all of the importer."})
            assert child.stdout is not None
            assert "gen 3" in child.stdout.readline()
            child.send_signal(signal.SIGINT)
            assert child.wait(timeout=10) == 130  # interrupted, as docs/cli-json.md says of every command
            assert child.stderr is not None
            assert child.stderr.read() == "handoff: interrupted\n"
        finally:
            if child.poll() is None:
                child.kill()


def test_python_m_log_follow_with_json_is_a_usage_error(thread: Path, subprocess_env: dict[str, str]) -> None:
    for argv in (["--follow", "--json"], ["--json", "-f"]):
        done = subprocess.run(
            [sys.executable, "-m", "handoff_files", "log", str(thread), *argv],
            env=subprocess_env,
            capture_output=True,
            text=True,
            check=False,
            timeout=60,
        )
        assert done.returncode == 2, done.stderr
        assert done.stderr.startswith("usage: handoff log")
        assert "not allowed with argument" in done.stderr
        assert done.stdout == ""


# -- history stars the generation a restore returns ----------------------------------------------


@pytest.fixture
def lagging(thread_dir: Path) -> Path:
    """A thread of three generations whose primary was put back to generation 2 (history/ holds 3)."""
    store = HandoffStore(thread_dir)
    for text in ("one.", "two.", "three."):
        store.save({"narrative": text})
    shutil.copyfile(thread_dir / "history" / "00000002.json", thread_dir / "handoff.json")
    return thread_dir


def test_history_stars_the_generation_a_restore_returns_and_flags_a_primary_behind_it(
    lagging: Path, subprocess_env: dict[str, str]
) -> None:
    assert HandoffStore(lagging).restore().generation == 3
    listed = machine(handoff("history", lagging, "--json", env=subprocess_env))
    assert [e["generation"] for e in listed if e["current"]] == [3]
    [flagged] = [e for e in listed if e["path"] == str(lagging / "handoff.json")]
    assert flagged["generation"] == 2
    assert flagged["current"] is False
    assert "behind generation 3" in flagged["problem"]
    assert "doctor --repair" in flagged["problem"]
    text = handoff("history", lagging, env=subprocess_env)
    assert text.returncode == 0, text.stderr
    lines = text.stdout.splitlines()
    assert lines[0].startswith("2  handoff.json")
    assert "BAD: holds generation 2, behind generation 3" in lines[0]
    assert [line.split()[0] for line in lines[1:]] == ["3*", "2", "1"]
    shown = machine(handoff("show", lagging, "--json", env=subprocess_env))
    assert shown["handoff"]["generation"] == 3, "the star and show agree"


def test_history_of_a_healthy_thread_stars_its_primarys_generation(thread: Path) -> None:
    entries = HandoffStore(thread).history()
    assert [(e.generation, e.current, e.problem) for e in entries] == [(2, True, None), (1, False, None)]
