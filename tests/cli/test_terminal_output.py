"""Text output for people: fitted to a terminal's width, short digests, colour only on a terminal, times with a zone.

The terminal tests run ``python -m handoff_files`` with stdout on a real pty whose window size is
set, since the width, colour and ``isatty`` are all decided from the terminal itself.
"""

from __future__ import annotations

import datetime as dt
import fcntl
import json
import os
import pty
import re
import select
import shutil
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

import pytest

from handoff_files import HandoffStore
from handoff_files.cli.main import main
from handoff_files.cli.render import briefing, history_table
from handoff_files.cli.terminal import Terminal
from handoff_files.thread.results import HistoryEntry

NARRATIVE = (
    "Ported half the importer. The date bug is understood; the fix belongs in the parser rather than "
    "in the data, because the data is right and the parser applies the local zone twice when it reads "
    "old records from the archive. Next: finish the port, then re-run the nightly comparison job."
)
CONTENT = {
    "narrative": NARRATIVE,
    "state": {"active_tasks": ["port the importer's remaining eleven record types one at a time"]},
    "priorities": [{"task": "finish the port of the record types that the nightly job reads", "urgency": "first"}],
    "warnings": [{"text": "dates in the old data are local time, not UTC as the new data is", "severity": "high"}],
    "decisions": [
        {
            "decision": "fix the parser, not the data",
            "reason": "the data is right: every record was checked against the archive's own printout",
            "status": "deferred",
        }
    ],
}
ANSI = re.compile(r"\x1b\[[0-9;]*m")
FULL_DIGEST = re.compile(r"[0-9a-f]{64}")
SHORT_DIGEST = re.compile(r"\b[a-z0-9]+:[0-9a-f]{12}(?![0-9a-f])")
WHEN = r"\d{4}-\d\d-\d\d \d\d:\d\d:\d\d(?:\.\d+)?Z"


def terminal_env(subprocess_env: dict[str, str], **overrides: str | None) -> dict[str, str]:
    """The child's environment with a colour terminal and no COLUMNS (which would win over the pty's size)."""
    env = {k: v for k, v in subprocess_env.items() if k not in {"COLUMNS", "LINES", "NO_COLOR"}}
    env["TERM"] = "xterm-256color"
    for key, value in overrides.items():
        if value is None:
            env.pop(key, None)
        else:
            env[key] = value
    return env


def on_a_terminal(argv: list[str], env: dict[str, str], *, columns: int, exit_code: int = 0) -> str:
    """Run ``python -m handoff_files ARGV`` with stdout on a pty *columns* wide; its output, newlines as ``\\n``."""
    leader, follower = pty.openpty()
    fcntl.ioctl(follower, termios.TIOCSWINSZ, struct.pack("HHHH", 24, columns, 0, 0))
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "handoff_files", *argv],
            stdin=subprocess.DEVNULL,
            stdout=follower,
            stderr=subprocess.PIPE,
            env=env,
        )
    finally:
        os.close(follower)  # the child holds the only copy: reading the leader ends when the child exits
    chunks = []
    deadline = time.monotonic() + 60
    try:
        while time.monotonic() < deadline:
            ready, _, _ = select.select([leader], [], [], 1.0)
            if not ready:
                continue
            try:
                data = os.read(leader, 65536)
            except OSError:  # EIO: every follower is closed, the child is done
                break
            if not data:
                break
            chunks.append(data)
        _, err = proc.communicate(timeout=60)
    finally:
        proc.kill()
        os.close(leader)
    assert proc.returncode == exit_code, err
    return b"".join(chunks).decode("utf-8").replace("\r\n", "\n")


def handoff(argv: list[str], env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """Run ``python -m handoff_files ARGV`` with stdout on a pipe."""
    return subprocess.run(
        [sys.executable, "-m", "handoff_files", *argv], capture_output=True, text=True, env=env, timeout=60, check=True
    )


def section(out: str, heading: str) -> list[str]:
    """The lines under *heading* in a briefing, up to the blank line that ends it."""
    lines = ANSI.sub("", out).splitlines()
    start = lines.index(heading) + 1
    end = lines.index("", start) if "" in lines[start:] else len(lines)
    return lines[start:end]


@pytest.fixture
def saved(tmp_path: Path) -> Path:
    """A thread with two generations of long-lined content: every layer has text to wrap."""
    thread = tmp_path / "importer-fix"
    store = HandoffStore(thread)
    store.save(CONTENT)
    store.save(CONTENT)
    return thread


@pytest.mark.parametrize("columns", [pytest.param(60, id="60-columns"), pytest.param(100, id="100-columns")])
def test_show_on_a_terminal_wraps_at_its_width_between_words(
    saved: Path, subprocess_env: dict[str, str], columns: int
) -> None:
    out = on_a_terminal(["show", str(saved)], terminal_env(subprocess_env), columns=columns)
    for line in ANSI.sub("", out).splitlines():
        # only a single word longer than the width (the thread's path) may pass it
        assert len(line) <= columns or " " not in line.strip(), line
    narrative = section(out, "NARRATIVE")
    assert len(narrative) > 1, "a long narrative is wrapped on a terminal"
    assert " ".join(narrative).split() == NARRATIVE.split(), "no word is broken across lines"
    warning = section(out, "WARNINGS")
    assert " ".join(warning).split() == ["!", "[high]", *CONTENT["warnings"][0]["text"].split()]  # type: ignore[index]


def test_show_on_a_terminal_gives_a_short_digest_and_json_the_full_one(
    saved: Path, subprocess_env: dict[str, str]
) -> None:
    out = on_a_terminal(["show", str(saved)], terminal_env(subprocess_env), columns=80)
    lines = ANSI.sub("", out).splitlines()
    header = " ".join(lines[: next(i for i, line in enumerate(lines) if line.startswith("from: "))])
    seal = str(HandoffStore(saved).restore().handoff.seal)
    algorithm, digest = seal.split(":")
    assert f"({algorithm}:{digest[:12]})" in header
    assert not FULL_DIGEST.search(out)
    shown = json.loads(handoff(["show", str(saved), "--json"], subprocess_env).stdout)
    assert shown["handoff"]["seal"]["digest"] == digest


def test_history_on_an_80_column_terminal_fits_with_short_digests(saved: Path, subprocess_env: dict[str, str]) -> None:
    out = ANSI.sub("", on_a_terminal(["history", str(saved)], terminal_env(subprocess_env), columns=80))
    lines = out.splitlines()
    assert [line.split()[0] for line in lines] == ["2*", "1"]
    assert max(len(line) for line in lines) <= 80, out
    assert all(SHORT_DIGEST.search(line) for line in lines), out
    assert not FULL_DIGEST.search(out)
    listed = json.loads(handoff(["history", str(saved), "--json"], subprocess_env).stdout)
    assert all(FULL_DIGEST.fullmatch(entry["checksum"].split(":")[1]) for entry in listed)


@pytest.mark.parametrize(
    ("no_color", "coloured"),
    [
        pytest.param(None, True, id="NO_COLOR-unset"),
        pytest.param("", True, id="NO_COLOR-empty"),
        pytest.param("1", False, id="NO_COLOR-1"),
        pytest.param("0", False, id="NO_COLOR-0-is-non-empty"),
    ],
)
def test_colour_only_on_a_terminal_and_never_with_a_non_empty_NO_COLOR(  # noqa: N802 -- the variable's name
    saved: Path, subprocess_env: dict[str, str], no_color: str | None, *, coloured: bool
) -> None:
    env = terminal_env(subprocess_env, NO_COLOR=no_color)
    shown = on_a_terminal(["show", str(saved)], env, columns=80)
    checked = on_a_terminal(["doctor", str(saved)], env, columns=80)
    if coloured:
        assert "\x1b[1mNARRATIVE\x1b[0m" in shown
        assert re.search(r"^\x1b\[32mok\x1b\[0m", checked, re.MULTILINE), checked
        # minimal: a heading or a level word is painted, the text around it is not
        assert ANSI.sub("", shown).count("NARRATIVE") == 1
        assert all(ANSI.sub("", line) == line for line in section(shown, "NARRATIVE"))
    else:
        assert "\x1b[" not in shown
        assert "\x1b[" not in checked


@pytest.mark.parametrize("command", [pytest.param(c, id=c) for c in ("show", "history", "log", "doctor")])
def test_a_pipe_gets_no_escape_codes_and_unwrapped_lines(
    saved: Path, subprocess_env: dict[str, str], command: str
) -> None:
    # a colour terminal in the environment and a narrow COLUMNS: stdout is still a pipe, not a terminal
    env = terminal_env(subprocess_env, COLUMNS="40")
    out = handoff([command, str(saved)], env).stdout
    assert "\x1b" not in out
    if command == "show":
        assert f"  {NARRATIVE}\n" in out, "a pipe gets each paragraph whole, on one line"


def test_save_receipt_gives_a_short_digest_and_json_the_full_one(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    content = tmp_path / "content.json"
    content.write_text(json.dumps(CONTENT), encoding="utf-8")
    thread = tmp_path / "t1"
    assert main(["save", str(thread), str(content)]) == 0
    out = capsys.readouterr().out
    seal = str(HandoffStore(thread).restore().handoff.seal)
    assert out == f"saved generation 1 to {thread / 'handoff.json'} ({seal[: seal.index(':') + 13]})\n"
    assert main(["save", str(thread), str(content), "--json"]) == 0
    assert FULL_DIGEST.fullmatch(json.loads(capsys.readouterr().out)["checksum"].split(":")[1])


def test_show_history_and_log_give_times_with_their_zone(saved: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["show", str(saved)]) == 0
    assert re.search(rf"sealed {WHEN} \(", capsys.readouterr().out.splitlines()[0])
    assert main(["history", str(saved)]) == 0
    assert all(re.search(rf"  {WHEN}  ", line) for line in capsys.readouterr().out.splitlines())
    assert main(["log", str(saved)]) == 0
    assert all(re.match(rf"{WHEN}  ", line) for line in capsys.readouterr().out.splitlines())


def test_log_hides_the_document_lines_of_journal_first_saves(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    thread = tmp_path / "t1"
    store = HandoffStore(thread, durability="journal")
    store.save(CONTENT)
    store.save(CONTENT)
    assert main(["log", str(thread)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert [line.split()[2:5] for line in lines] == [["saved", "gen", "1"], ["saved", "gen", "2"]]
    assert main(["log", str(thread), "--json"]) == 0  # machine output keeps every line
    events = [entry["event"] for entry in json.loads(capsys.readouterr().out)["entries"]]
    assert events == ["document", "saved", "document", "saved"]


def test_history_lists_the_primarys_generation_when_history_is_deleted(
    saved: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    shutil.rmtree(saved / "history")
    assert main(["history", str(saved)]) == 0
    out = capsys.readouterr().out
    assert "(no generations)" not in out
    [line] = out.splitlines()
    assert line.split()[:2] == ["2*", "handoff.json"]
    assert "no verified history/ copy" in line
    assert "handoff doctor --repair" in line
    assert main(["history", str(saved), "--json"]) == 0
    [entry] = json.loads(capsys.readouterr().out)
    seal = str(HandoffStore(saved).restore().handoff.seal)
    assert (entry["generation"], entry["current"], entry["checksum"], entry["problem"]) == (2, True, seal, None)
    assert entry["path"] == str(saved / "handoff.json")


@pytest.mark.parametrize("damage", [pytest.param("deleted", id="deleted"), pytest.param("truncated", id="truncated")])
def test_history_lists_the_primary_beside_older_copies_when_its_own_copy_is_lost(
    saved: Path, capsys: pytest.CaptureFixture[str], damage: str
) -> None:
    copy = saved / "history" / "00000002.json"
    if damage == "deleted":
        copy.unlink()
    else:
        os.truncate(copy, 100)
    assert main(["history", str(saved)]) == 0
    lines = capsys.readouterr().out.splitlines()
    expected = [["2*", "handoff.json"], ["1", "history/00000001.json"]]
    if damage == "truncated":
        expected.insert(1, ["2", "history/00000002.json", "BAD:"])
    assert [line.split()[: len(row)] for line, row in zip(lines, expected, strict=True)] == expected
    assert "no verified history/ copy" in lines[0]
    assert not any("no verified" in line for line in lines[1:])


def test_history_short_digests_grow_until_they_are_unique(tmp_path: Path) -> None:
    same_start = "ab" * 7  # two digests that agree on their first 14 hex digits
    sealed = dt.datetime(2026, 1, 2, 3, 4, 5, tzinfo=dt.UTC)
    entries = [
        HistoryEntry(
            g, tmp_path / "history" / f"0000000{g}.json", g == 2, f"blake3:{same_start}{g}{'0' * 49}", sealed, None
        )
        for g in (2, 1)
    ]
    out = history_table(entries, term=Terminal())
    assert re.findall(r"blake3:[0-9a-f]+", out) == [f"blake3:{same_start}2", f"blake3:{same_start}1"]


@pytest.mark.parametrize("width", [pytest.param(w, id=f"{w}-columns") for w in (24, 41, 57, 80, 133)])
def test_a_briefing_never_breaks_a_word_and_fits_any_width(saved: Path, width: int) -> None:
    out = briefing(HandoffStore(saved).restore(), term=Terminal(width=width))
    for line in out.splitlines():
        # only a single word longer than the width (a path) may pass it
        assert len(line) <= width or " " not in line.strip(), line
    assert " ".join(section(out, "NARRATIVE")).split() == NARRATIVE.split()
    decisions = " ".join(section(out, "DECISIONS")).split()
    assert " ".join(decisions).count(CONTENT["decisions"][0]["reason"]) == 1  # type: ignore[index]
