"""``--json`` is one format: times in UTC with a Z, structured fields instead of sentences, errors as objects."""

from __future__ import annotations

import json
import os
import re
import shutil
from pathlib import Path

import pytest

from tests.cli.shell import UTC_Z, handoff, machine
from tests.conftest import ROOT

CONTENT = '{"narrative": "Ported half the importer.", "priorities": [{"task": "port the rest", "urgency": "first"}]}'


def saved(thread: Path, env: dict[str, str], times: int = 1) -> None:
    for _ in range(times):
        assert handoff("save", thread, stdin=CONTENT, env=env).returncode == 0


def edit(primary: Path) -> None:
    """A person's edit: new text, and a new mtime (an editor rewrites the file)."""
    primary.write_text(primary.read_text(encoding="utf-8").replace("half", "all"), encoding="utf-8")
    os.utime(primary, (primary.stat().st_mtime + 60, primary.stat().st_mtime + 60))


def test_save_seal_history_and_migrate_give_created_at_in_utc_with_z(
    tmp_path: Path, subprocess_env: dict[str, str]
) -> None:
    thread = tmp_path / "t1"
    receipt = machine(handoff("save", thread, "--json", stdin=CONTENT, env=subprocess_env))
    assert re.fullmatch(UTC_Z, receipt["created_at"]), receipt["created_at"]
    shown = machine(handoff("show", thread, "--json", env=subprocess_env))
    assert receipt["created_at"] == shown["handoff"]["created_at"], "the receipt names the moment as the file does"
    edit(thread / "handoff.json")
    sealed = machine(handoff("seal", thread, "--json", env=subprocess_env))
    assert re.fullmatch(UTC_Z, sealed["created_at"]), sealed["created_at"]
    listed = machine(handoff("history", thread, "--json", env=subprocess_env))
    assert [entry["generation"] for entry in listed] == [2, 1]
    assert all(re.fullmatch(UTC_Z, entry["created_at"]) for entry in listed), listed
    old = tmp_path / "old-run"
    old.mkdir()
    shutil.copyfile(ROOT / "samples" / "v1.0" / "coding-task.json", old / "handoff.json")
    migrated = machine(handoff("migrate", old, "--json", env=subprocess_env))
    assert re.fullmatch(UTC_Z, migrated["receipt"]["created_at"]), migrated["receipt"]


def test_seal_with_nothing_to_seal_says_changed_false_instead_of_a_problem(
    tmp_path: Path, subprocess_env: dict[str, str]
) -> None:
    thread = tmp_path / "t1"
    saved(thread, subprocess_env)
    idle = handoff("seal", thread, "--json", env=subprocess_env)
    assert idle.returncode == 0, idle.stderr
    assert (machine(idle)["changed"], machine(idle)["problems"], machine(idle)["generation"]) == (False, [], 1)
    edit(thread / "handoff.json")
    done = machine(handoff("seal", thread, "--json", env=subprocess_env))
    assert (done["changed"], done["generation"]) == (True, 2)
    text = handoff("seal", thread, env=subprocess_env)
    assert "already sealed" in text.stdout
    assert "sealed generation" not in text.stdout, "nothing was sealed: the text must not say it was"


def test_migrate_json_says_whether_this_run_wrote_a_generation(tmp_path: Path, subprocess_env: dict[str, str]) -> None:
    old = tmp_path / "old-run"
    old.mkdir()
    shutil.copyfile(ROOT / "samples" / "v1.0" / "coding-task.json", old / "handoff.json")
    dry = machine(handoff("migrate", old, "--dry-run", "--json", env=subprocess_env))
    assert (dry["changed"], dry["receipt"]) == (False, None)
    done = machine(handoff("migrate", old, "--json", env=subprocess_env))
    assert done["changed"] is True
    again = machine(handoff("migrate", old, "--json", env=subprocess_env))
    assert (again["changed"], again["original_version"]) == (False, "2.1")


def test_export_context_with_json_prints_one_object_with_or_without_an_output_file(
    tmp_path: Path, subprocess_env: dict[str, str]
) -> None:
    context = b'{"conversation_history":[{"content":"hi","role":"user"}],"metadata":{},"tool_state":{"k":1}}'
    (tmp_path / "context.bin").write_bytes(context)
    thread = tmp_path / "t1"
    assert handoff("import", "--from", "sw4rm", thread, tmp_path / "context.bin", env=subprocess_env).returncode == 0
    printed = machine(handoff("export-context", "--to", "sw4rm", thread, "--json", env=subprocess_env))
    assert printed == {"format": "sw4rm", "path": None, "bytes": len(context), "context": json.loads(context)}
    out = tmp_path / "out.bin"
    written = machine(handoff("export-context", "--to", "sw4rm", thread, "-o", out, "--json", env=subprocess_env))
    assert written == {**printed, "path": str(out)}
    assert out.read_bytes() == context
    plain = handoff("export-context", "--to", "sw4rm", thread, env=subprocess_env)
    assert plain.stdout.encode("utf-8") == context + b"\n", "without --json the SW4RM bytes are printed as they are"


def corrupt_copy(thread: Path) -> Path:
    """The primary with one byte of its narrative changed and its mtime kept: damage, not an edit."""
    primary = thread / "handoff.json"
    st = primary.stat()
    primary.write_bytes(primary.read_bytes().replace(b"Ported", b"Portex", 1))
    os.utime(primary, ns=(st.st_atime_ns, st.st_mtime_ns))
    return primary


@pytest.mark.parametrize(
    ("case", "kind"),
    [
        pytest.param("missing", "HandoffNotFoundError", id="missing"),
        pytest.param("corrupt", "ChecksumMismatchError", id="corrupt"),
        pytest.param("unparsable", "HandoffParseError", id="unparsable"),
    ],
)
def test_a_failed_command_with_json_prints_one_error_object_and_keeps_its_stderr_line(
    tmp_path: Path, subprocess_env: dict[str, str], case: str, kind: str
) -> None:
    thread = tmp_path / "t1"
    saved(thread, subprocess_env)
    target = {
        "missing": tmp_path / "nowhere",
        "corrupt": corrupt_copy(thread) if case == "corrupt" else None,
        "unparsable": tmp_path / "bad.json",
    }[case]
    (tmp_path / "bad.json").write_text('{"narrative": "unterminated', encoding="utf-8")
    assert target is not None
    done = handoff("show", target, "--json", env=subprocess_env)
    assert done.returncode == 1, "exit codes are unchanged: the kind, not the code, tells corrupt from missing"
    error = machine(done)["error"]
    assert error["kind"] == kind
    assert error["path"] == str(target)
    assert done.stderr == f"handoff: {error['path']}: {error['reason']}\n"
    plain = handoff("show", target, env=subprocess_env)
    assert (plain.returncode, plain.stdout, plain.stderr) == (1, "", done.stderr), "without --json: the line alone"


@pytest.mark.parametrize(
    "argv",
    [pytest.param(["mcp", "--thread", "t1", "--json"], id="mcp"), pytest.param(["hook", "codex", "--json"], id="hook")],
)
def test_commands_whose_stdout_is_another_protocol_refuse_json(
    tmp_path: Path, subprocess_env: dict[str, str], argv: list[str]
) -> None:
    done = handoff(*argv, env=subprocess_env, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert "unrecognized arguments: --json" in done.stderr
