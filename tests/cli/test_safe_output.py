"""Text another agent wrote never drives the terminal: ``handoff show``, ``inbox list`` and errors escape it.

A handoff file (a cloned repository's, a bucket's) or an inbox request can hold escape sequences
(retitle the window, hide text, rewrite what was printed), C1 controls and bidirectional overrides.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from handoff_files import HandoffInbox, HandoffStore
from handoff_files.cli.main import main
from handoff_files.cli.safe_output import escape_unsafe
from handoff_files.cli.terminal import Terminal, paint

HOSTILE = "title \x1b]0;pwned\x07 hidden \x1b[8mgone\x1b[0m c1 \x9b31m bidi \u202eevil del \x7f cr \r end"
# what must never reach a terminal raw: ESC not starting one of the CLI's colour codes, BEL, C1, bidi, DEL, CR
RAW = re.compile("[\x1b\x07\x7f\x9b\u202e\r]")


def test_escape_unsafe_keeps_text_newlines_tabs_and_the_clis_own_colours() -> None:
    assert escape_unsafe("plain\ttext\nnext line é ü 漢") == "plain\ttext\nnext line é ü 漢"
    painted = paint("heading", "heading", Terminal(colour=True))
    assert escape_unsafe(painted) == "\x1b[1mheading\x1b[0m"
    assert escape_unsafe("\x1b]0;x\x07\x9b\u202e") == "\\u001b]0;x\\u0007\\u009b\\u202e"


def test_text_cannot_paint_itself_in_the_clis_colours() -> None:
    """A file's ``ESC [ 31 m`` would make its text look like one of the CLI's red warnings: escaped."""
    assert escape_unsafe("\x1b[31mERROR: trust me\x1b[0m") == "\\u001b[31mERROR: trust me\\u001b[0m"
    assert escape_unsafe(paint("\x1b[32mok", "bad", Terminal(colour=True))) == "\x1b[31m\\u001b[32mok\x1b[0m"


def test_emoji_and_right_to_left_text_pass_and_overrides_do_not() -> None:
    family = "\U0001f469\u200d\U0001f467"  # woman ZWJ girl: one emoji
    persian = "\u0645\u06cc\u200c\u062e\u0648\u0627\u0647\u0645"  # a zero-width non-joiner inside a word
    marked = "abc\u200f(\u05d0)\u200e"  # right-to-left and left-to-right marks
    assert escape_unsafe(family + persian + marked) == family + persian + marked
    assert escape_unsafe("\u202e\u2066\u200b") == "\\u202e\\u2066\\u200b"


def test_show_escapes_a_hostile_narrative_and_json_keeps_it_exact(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    HandoffStore(tmp_path / "t").save({"narrative": HOSTILE, "state": {"data": {"note": HOSTILE}}})
    assert main(["show", str(tmp_path / "t")]) == 0
    shown = capsys.readouterr().out
    assert "pwned" in shown
    assert not RAW.search(shown), repr(shown)
    assert main(["show", str(tmp_path / "t"), "--json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["handoff"]["narrative"] == HOSTILE
    assert document["handoff"]["state"]["data"] == {"note": HOSTILE}


def test_inbox_list_shows_a_hostile_reason_escaped_on_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    inbox = HandoffInbox(tmp_path / "inbox")
    inbox.request_handoff("alpha", "beta", "two\nlines " + HOSTILE[:40])
    inbox.request_handoff("alpha", "beta", "plain")
    assert main(["inbox", str(tmp_path / "inbox"), "list"]) == 0
    listed = capsys.readouterr().out
    assert len(listed.splitlines()) == 2  # one line per request
    assert not RAW.search(listed), repr(listed)


def test_an_error_quoting_hostile_text_is_escaped_on_stderr(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A folder named by a hostile repository (ESC ] 0 ; pwned BEL): the error naming it is escaped."""
    assert main(["show", str(tmp_path / "thread \x1b]0;pwned\x07 \u202e")]) == 1
    err = capsys.readouterr().err
    assert err.startswith("handoff: ")
    assert "pwned" in err
    assert not RAW.search(err), repr(err)
