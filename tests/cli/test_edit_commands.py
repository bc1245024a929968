"""``handoff edit`` (a private copy in $VISUAL/$EDITOR, saved as the next generation) and ``handoff set KEY=VALUE``.

Each test runs ``main()`` on a real thread. The editor is a real program: a small Python script
(below) that rewrites the file it is given, as a person's editor would, or ``true``/``false``.
"""

from __future__ import annotations

import io
import json
import shlex
import sys
import tempfile
from pathlib import Path
from typing import Any, Final

import pytest

from handoff_files import HandoffStore
from handoff_files.cli import main as cli_main
from handoff_files.cli.commands_edit import editor_command
from handoff_files.cli.main import main
from tests.cli.test_json_schemas import check

CONTENT: Final = {
    "narrative": "Ported half the importer. The date bug is understood.",
    "state": {"active_tasks": ["port the importer"], "data": {"ported": 12}},
    "priorities": [{"task": "port the rest", "urgency": "first"}],
    "warnings": [{"text": "dates in the old data are local time", "severity": "high"}],
}

# The "editor": `EDITOR='python editor.py MODE ARG…'`; the file to edit comes last, as an editor gets it.
EDITOR_SCRIPT: Final = """
import json, pathlib, sys
mode, args, target = sys.argv[1], sys.argv[2:-1], pathlib.Path(sys.argv[-1])
if mode == "replace":  # replace OLD NEW: a person's change of some text
    target.write_text(target.read_text(encoding="utf-8").replace(args[0], args[1]), encoding="utf-8")
elif mode == "write":  # write TEXT: the whole file
    target.write_text(args[0], encoding="utf-8")
elif mode == "json":  # json KEY VALUE: set a top-level key of a JSON file
    document = json.loads(target.read_text(encoding="utf-8"))
    document[args[0]] = json.loads(args[1])
    target.write_text(json.dumps(document), encoding="utf-8")
elif mode == "copy":  # copy DEST: keep what the editor was shown, change nothing
    pathlib.Path(args[0]).write_bytes(target.read_bytes())
elif mode == "bad-then-good":  # COUNTER: first run breaks the file, the next mends it with a change
    counter = pathlib.Path(args[0])
    runs = int(counter.read_text()) if counter.exists() else 0
    counter.write_text(str(runs + 1))
    text = target.read_text(encoding="utf-8")
    if runs == 0:
        pathlib.Path(args[0] + ".good").write_text(text.replace("Ported half", "Ported all"), encoding="utf-8")
        target.write_text(text + "\\n{{{ not a handoff", encoding="utf-8")
    else:
        target.write_text(pathlib.Path(args[0] + ".good").read_text(encoding="utf-8"), encoding="utf-8")
elif mode == "race":  # THREAD: another writer saves while the person edits; then the person's change
    from handoff_files import HandoffStore
    HandoffStore(args[0]).save({"narrative": "saved by another writer meanwhile"})
    target.write_text(target.read_text(encoding="utf-8").replace("Ported half", "Ported all"), encoding="utf-8")
"""


@pytest.fixture
def edit_tmp(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """The temp directory the private copies go to, so a test can see what was left there (and nothing leaks)."""
    folder = tmp_path / "tmp"
    folder.mkdir()
    monkeypatch.setattr(tempfile, "tempdir", str(folder))
    monkeypatch.setattr(sys, "stdin", io.StringIO())  # not a terminal, unless a test says so
    monkeypatch.delenv("VISUAL", raising=False)
    return folder


@pytest.fixture
def editor(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Any:
    """Set $EDITOR to the script above in MODE with ARGS."""
    script = tmp_path / "editor.py"
    script.write_text(EDITOR_SCRIPT, encoding="utf-8")

    def use(mode: str, *args: str) -> None:
        monkeypatch.setenv("EDITOR", shlex.join([sys.executable, str(script), mode, *args]))

    return use


class Terminal(io.StringIO):
    """A person at a terminal typing *answers*."""

    def isatty(self) -> bool:
        return True


def saved(thread: Path, fmt: str = "json") -> HandoffStore:
    store = HandoffStore(thread, format=fmt)  # type: ignore[arg-type]
    store.save(CONTENT)
    return store


def snapshot(thread: Path) -> dict[str, bytes]:
    """Every file of the thread and its bytes (the lock file aside): what a failed edit must leave as it was."""
    return {
        str(p.relative_to(thread)): p.read_bytes()
        for p in sorted(thread.rglob("*"))
        if p.is_file() and ".lock" not in p.name
    }


def kept_copies(folder: Path) -> list[Path]:
    return sorted(folder.glob("handoff-edit-*/handoff.*"))


# -- edit ------------------------------------------------------------------------------------


@pytest.mark.parametrize("fmt", [pytest.param("json", id="json"), pytest.param("yaml", id="yaml")])
def test_edit_saves_a_change_of_the_layers_as_the_next_generation(
    tmp_path: Path, edit_tmp: Path, editor: Any, capsys: pytest.CaptureFixture[str], fmt: str
) -> None:
    thread = tmp_path / "t1"
    store = saved(thread, fmt)
    editor("replace", "Ported half", "Ported all")
    assert main(["edit", str(thread)]) == 0
    out, err = capsys.readouterr()
    assert "saved generation 2, the edit of generation 1" in out
    assert '-  "narrative": "Ported half' in err
    assert '+  "narrative": "Ported all' in err
    restored = store.restore()
    assert (restored.generation, restored.source) == (2, "primary")
    assert restored.handoff.narrative.startswith("Ported all")
    assert store.primary.suffix == f".{fmt}"
    assert list(edit_tmp.iterdir()) == []  # the private copy is gone once saved


def test_edit_shows_the_yaml_primary_exactly_comments_included(
    tmp_path: Path, edit_tmp: Path, editor: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    thread = tmp_path / "t1"
    store = saved(thread, "yaml")
    seen = tmp_path / "seen.yaml"
    editor("copy", str(seen))
    assert main(["edit", str(thread)]) == 0
    assert seen.read_bytes() == store.primary.read_bytes()
    assert seen.read_text(encoding="utf-8").startswith("# handoff-files handoff.")


@pytest.mark.parametrize(
    "command", [pytest.param("true", id="editor-quits"), pytest.param("copy", id="editor-saves-same-bytes")]
)
def test_edit_that_changes_nothing_saves_nothing(
    tmp_path: Path,
    edit_tmp: Path,
    editor: Any,
    *,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    command: str,
) -> None:
    thread = tmp_path / "t1"
    saved(thread)
    if command == "true":
        monkeypatch.setenv("EDITOR", "true")
    else:
        editor("copy", str(tmp_path / "seen"))
    before = snapshot(thread)
    assert main(["edit", str(thread)]) == 0
    assert "no change to the layers of generation 1: nothing was saved" in capsys.readouterr().out
    assert snapshot(thread) == before
    assert list(edit_tmp.iterdir()) == []


def test_an_invalid_edit_without_a_terminal_is_kept_aside_and_exits_1(
    tmp_path: Path, edit_tmp: Path, editor: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    thread = tmp_path / "t1"
    saved(thread)
    before = snapshot(thread)
    editor("write", '{"narrative": "only this"')
    assert main(["edit", str(thread)]) == 1
    err = capsys.readouterr().err
    [kept] = kept_copies(edit_tmp)
    assert f"the edit is kept at {kept}" in err
    assert kept.read_text(encoding="utf-8") == '{"narrative": "only this"'
    assert (kept.stat().st_mode & 0o777) == 0o600
    assert snapshot(thread) == before  # nothing saved, nothing touched
    assert "(r)eopen" not in err  # no terminal: nobody to ask


def test_an_invalid_edit_on_a_terminal_can_be_reopened_and_mended(
    tmp_path: Path, edit_tmp: Path, editor: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    thread = tmp_path / "t1"
    store = saved(thread)
    editor("bad-then-good", str(tmp_path / "runs"))
    monkeypatch.setattr(sys, "stdin", Terminal("r\n"))
    assert main(["edit", str(thread)]) == 0
    out, err = capsys.readouterr()
    assert "(r)eopen the editor, or (k)eep the file aside?" in err
    assert "saved generation 2" in out
    assert (tmp_path / "runs").read_text() == "2"
    assert store.restore().handoff.narrative.startswith("Ported all")
    assert kept_copies(edit_tmp) == []


def test_an_invalid_edit_on_a_terminal_can_be_kept_aside(
    tmp_path: Path, edit_tmp: Path, editor: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    thread = tmp_path / "t1"
    saved(thread)
    before = snapshot(thread)
    editor("bad-then-good", str(tmp_path / "runs"))
    monkeypatch.setattr(sys, "stdin", Terminal("k\n"))
    assert main(["edit", str(thread)]) == 1
    [kept] = kept_copies(edit_tmp)
    assert f"kept at {kept}" in capsys.readouterr().err
    assert "not a handoff" in kept.read_text(encoding="utf-8")
    assert snapshot(thread) == before


@pytest.mark.parametrize(
    ("key", "value"),
    [
        pytest.param("generation", "7", id="generation"),
        pytest.param("thread_id", '"someone-else"', id="thread_id"),
        pytest.param("created_at", '"2020-01-01T00:00:00Z"', id="created_at"),
    ],
)
def test_an_edit_of_the_envelope_is_refused_naming_the_field(
    tmp_path: Path, edit_tmp: Path, editor: Any, *, capsys: pytest.CaptureFixture[str], key: str, value: str
) -> None:
    thread = tmp_path / "t1"
    saved(thread)
    before = snapshot(thread)
    editor("json", key, value)
    assert main(["edit", str(thread), "--json"]) == 1
    error = json.loads(capsys.readouterr().out)["error"]
    assert error["kind"] == "HandoffValidationError"
    assert key in error["reason"]
    assert "change only the layers" in error["reason"]
    [kept] = kept_copies(edit_tmp)
    assert error["path"] == str(kept)
    assert snapshot(thread) == before


def test_an_edit_made_while_another_writer_saved_is_kept_not_saved_over_it(
    tmp_path: Path,
    edit_tmp: Path,
    editor: Any,
    *,
    monkeypatch: pytest.MonkeyPatch,
    subprocess_env: dict[str, str],
    capsys: pytest.CaptureFixture[str],
) -> None:
    thread = tmp_path / "t1"
    store = saved(thread)
    monkeypatch.setenv("PYTHONPATH", subprocess_env["PYTHONPATH"])
    editor("race", str(thread))
    assert main(["edit", str(thread)]) == 1
    err = capsys.readouterr().err
    assert "generation 2 was saved while this edit of generation 1 was open" in err
    assert '+  "narrative": "Ported all' in err  # the change, to redo on the newer generation
    restored = store.restore()
    assert (restored.generation, restored.handoff.narrative) == (2, "saved by another writer meanwhile")
    assert len(kept_copies(edit_tmp)) == 1


def test_an_editor_that_fails_keeps_the_copy_and_saves_nothing(
    tmp_path: Path, edit_tmp: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    thread = tmp_path / "t1"
    saved(thread)
    before = snapshot(thread)
    monkeypatch.setenv("EDITOR", "false")
    assert main(["edit", str(thread)]) == 1
    err = capsys.readouterr().err
    assert "the editor (false) exited with status 1: the edit was not read back" in err
    [kept] = kept_copies(edit_tmp)
    assert f"kept at {kept}" in err
    assert snapshot(thread) == before


def test_an_editor_that_cannot_start_is_named_and_leaves_no_copy(
    tmp_path: Path, edit_tmp: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    thread = tmp_path / "t1"
    saved(thread)
    monkeypatch.setenv("EDITOR", str(tmp_path / "no-such-editor"))
    assert main(["edit", str(thread)]) == 1
    assert "could not run the editor" in capsys.readouterr().err
    assert list(edit_tmp.iterdir()) == []


def test_edit_refuses_a_primary_holding_an_unsealed_edit(
    tmp_path: Path, edit_tmp: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    thread = tmp_path / "t1"
    store = saved(thread)
    store.primary.write_text(store.primary.read_text(encoding="utf-8").replace("Ported half", "Ported"), "utf-8")
    monkeypatch.setenv("EDITOR", "true")
    assert main(["edit", str(thread)]) == 1
    assert "`handoff seal` it" in capsys.readouterr().err
    assert list(edit_tmp.iterdir()) == []


@pytest.mark.parametrize(
    ("environ", "expected"),
    [
        pytest.param({"VISUAL": "code --wait", "EDITOR": "nano"}, ["code", "--wait"], id="visual-first"),
        pytest.param({"EDITOR": "'/opt/my editor/ed' -w"}, ["/opt/my editor/ed", "-w"], id="split-as-a-shell"),
        pytest.param({"VISUAL": "  ", "EDITOR": "nano"}, ["nano"], id="blank-visual-ignored"),
        pytest.param({}, ["vi"], id="default-vi"),
    ],
)
def test_the_editor_is_visual_then_editor_then_vi_split_as_a_shell_would(
    environ: dict[str, str], expected: list[str]
) -> None:
    assert editor_command(environ) == expected


def test_edit_json_output_matches_its_schema(
    tmp_path: Path, edit_tmp: Path, editor: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    thread = tmp_path / "t1"
    saved(thread)
    editor("replace", "Ported half", "Ported all")
    assert main(["edit", str(thread), "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    check(document, "edit")
    assert (document["status"], document["changed"], document["from_generation"]) == ("saved", True, 1)
    assert document["receipt"]["generation"] == 2
    monkeypatch.setenv("EDITOR", "true")
    assert main(["edit", str(thread), "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    check(document, "edit")
    assert (document["status"], document["changed"], document["receipt"]) == ("unchanged", False, None)


# -- set -------------------------------------------------------------------------------------


def test_set_changes_dotted_keys_as_the_next_generation(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    thread = tmp_path / "t1"
    store = saved(thread)
    argv = [
        "set",
        str(thread),
        "state.data.ported=40",
        "narrative=Ported it all.",
        "state.active_tasks+=port the rest",
        "priorities.0.urgency=primary",
        "state.data.new.depth=1",
    ]
    assert main(argv) == 0
    out, err = capsys.readouterr()
    assert "saved generation 2, a change of generation 1" in out
    assert '+  "narrative": "Ported it all."' in err
    h = store.restore().handoff
    assert h.generation == 2
    assert h.narrative == "Ported it all."
    assert h.state.data == {"ported": 40, "new": {"depth": 1}}
    assert h.state.active_tasks == ["port the importer", "port the rest"]
    assert h.priorities[0].urgency == "primary"
    assert h.warnings[0].text == "dates in the old data are local time"  # the rest as it was


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        pytest.param("12", 12, id="number"),
        pytest.param("true", True, id="boolean"),
        pytest.param('"12"', "12", id="json-string"),
        pytest.param('{"a": [1, 2]}', {"a": [1, 2]}, id="object"),
        pytest.param("port the rest", "port the rest", id="text"),
        pytest.param("NaN", "NaN", id="not-strict-json-is-text"),
        pytest.param("", "", id="empty-is-text"),
        pytest.param("1.5", 1.5, id="decimal"),
        pytest.param("12345678901234567890", 12345678901234567890, id="big-whole-number"),
        pytest.param("1.10", "1.10", id="trailing-zero-is-kept-as-typed"),
        pytest.param("1e3", "1e3", id="exponent-is-kept-as-typed"),
        pytest.param("-0", "-0", id="minus-zero-is-kept-as-typed"),
        pytest.param("3.14159265358979323846", "3.14159265358979323846", id="more-digits-than-a-float-is-text"),
    ],
)
def test_set_values_are_json_when_they_parse_else_text(tmp_path: Path, value: str, expected: object) -> None:
    thread = tmp_path / "t1"
    store = saved(thread)
    assert main(["set", str(thread), f"state.data.x={value}"]) == 0
    assert store.restore().handoff.state.data["x"] == expected


@pytest.mark.parametrize(
    "key",
    [
        pytest.param(name, id=name)
        for name in ("generation", "seal", "agent_id", "thread_id", "schema_version", "created_at", "parent", "lineage")
    ],
)
def test_set_refuses_a_key_outside_the_layers_naming_it(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], key: str
) -> None:
    thread = tmp_path / "t1"
    saved(thread)
    before = snapshot(thread)
    assert main(["set", str(thread), f"{key}.x=1" if key in ("seal", "lineage") else f"{key}=7"]) == 1
    err = capsys.readouterr().err
    assert f"{key} is the store's to write, not a layer" in err
    assert snapshot(thread) == before


@pytest.mark.parametrize(
    ("assignment", "reason"),
    [
        pytest.param("narative=x", "no layer named 'narative'", id="unknown-layer"),
        pytest.param("state..data=1", "is not a dotted key", id="empty-part"),
        pytest.param("priorities.0.urgency=soon", "priorities.0.urgency", id="invalid-result"),
        pytest.param("state.data.ported.x=1", "state.data.ported is 12", id="through-a-number"),
        pytest.param("priorities.5.task=x", "is a list of 1", id="index-out-of-range"),
        pytest.param("narrative+=more", "narrative is text, not a list", id="append-to-text"),
        pytest.param(
            'state.data.v={"version": 1.10}', "1.10 would be stored as 1.1", id="a-number-inside-that-would-change"
        ),
    ],
)
def test_set_refuses_what_does_not_make_valid_layers_and_saves_nothing(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], assignment: str, reason: str
) -> None:
    thread = tmp_path / "t1"
    saved(thread)
    before = snapshot(thread)
    assert main(["set", str(thread), assignment]) == 1
    err = capsys.readouterr().err
    assert reason in err
    assert len(err.strip().splitlines()) == 1
    assert snapshot(thread) == before


def test_set_dry_run_prints_the_diff_and_saves_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    thread = tmp_path / "t1"
    saved(thread)
    before = snapshot(thread)
    assert main(["set", str(thread), "state.data.ported=40", "--dry-run"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("--- generation 1\n+++ handoff (set)\n")
    assert '-      "ported": 12' in out
    assert '+      "ported": 40' in out
    assert snapshot(thread) == before


def test_set_to_the_value_already_there_saves_nothing(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    thread = tmp_path / "t1"
    saved(thread)
    before = snapshot(thread)
    assert main(["set", str(thread), "state.data.ported=12"]) == 0
    assert "no change to the layers of generation 1: nothing was saved" in capsys.readouterr().out
    assert snapshot(thread) == before


def test_set_json_output_matches_its_schema(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    thread = tmp_path / "t1"
    saved(thread)
    assert main(["set", str(thread), "state.data.ported=40", "--dry-run", "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    check(document, "set")
    assert (document["dry_run"], document["changed"], document["receipt"]) == (True, False, None)
    assert '+      "ported": 40' in document["diff"]
    assert main(["set", str(thread), "state.data.ported=40", "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    check(document, "set")
    assert (document["changed"], document["from_generation"], document["receipt"]["generation"]) == (True, 1, 2)


def test_edit_and_set_take_wait_and_have_help() -> None:
    parser = cli_main.build_parser()
    for name in ("edit", "set"):
        args = parser.parse_args([name, "t1", *(["a=1"] if name == "set" else []), "--wait", "0"])
        assert args.wait == 0
    assert "edit" in parser.format_help()
    assert "set" in parser.format_help()


def test_set_keeps_a_version_number_as_it_was_typed(tmp_path: Path, subprocess_env: dict[str, str]) -> None:
    from tests.cli.shell import handoff

    thread = tmp_path / "t1"
    saved(thread)
    done = handoff("set", thread, "state.data.version=1.10", env=subprocess_env)
    assert done.returncode == 0, done.stderr
    assert '+      "version": "1.10"' in done.stderr  # the change shown is the one saved
    assert HandoffStore(thread).restore().handoff.state.data["version"] == "1.10"
