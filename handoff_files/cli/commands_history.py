"""The history commands: ``handoff diff`` between two generations, and ``handoff log``'s time window and ``--follow``.

Only argparse and the argument types load with this module: :func:`register` runs whenever the
parser is built, so each handler imports the library modules it uses when it runs.
"""

from __future__ import annotations

import argparse
import re
import sys
import time
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Final

from handoff_files.cli.arguments import positive

if TYPE_CHECKING:
    import datetime as dt

    from handoff_files.cli.terminal import Terminal
    from handoff_files.thread.journal import Entry, Journal

__all__ = ["FOLLOW_INTERVAL", "cmd_diff", "follow", "register", "since"]

#: Seconds between two looks at the journal's size under ``handoff log --follow``.
FOLLOW_INTERVAL: Final = 0.5

_DURATION: Final = re.compile(r"(\d+(?:\.\d+)?)([smhdw])")
_UNIT_SECONDS: Final = {"s": 1, "m": 60, "h": 3600, "d": 86400, "w": 604800}

Add = Callable[[str, Callable[[argparse.Namespace], str], str], argparse.ArgumentParser]


def register(add: Add) -> None:
    """Add ``handoff diff`` with *add*, the parser's ``add(name, handler, help)``."""
    p = add(
        "diff",
        cmd_diff,
        "show what changed in the layers between two generations kept in history/ (default: the newest and "
        "the one before it; history/ keeps the newest 10 by default, a LangGraph saver every checkpoint)",
    )
    p.add_argument("dir", metavar="THREAD", help="thread directory")
    p.add_argument(
        "before", nargs="?", type=positive, metavar="A", help="the older generation (default: the one before B)"
    )
    p.add_argument(
        "after", nargs="?", type=positive, metavar="B", help="the newer generation (default: the newest in history/)"
    )


def since(text: str) -> dt.datetime:
    """A moment to read from: an ISO 8601 time (UTC unless it gives an offset) or a duration back from now."""
    import datetime as dt  # noqa: PLC0415 -- only --since needs it: not at start-up, which loads this module

    found = _DURATION.fullmatch(text.strip())
    try:
        if found:
            ago = dt.timedelta(seconds=float(found[1]) * _UNIT_SECONDS[found[2]])
            return dt.datetime.now(dt.UTC) - ago
        moment = dt.datetime.fromisoformat(text.strip())
    except (ValueError, OverflowError) as exc:
        msg = (
            f"expected an ISO 8601 time (2026-05-01T14:00Z, UTC unless it gives an offset) "
            f"or a duration back from now (30s, 10m, 2h, 1d, 1w), not {text!r}"
        )
        raise argparse.ArgumentTypeError(msg) from exc
    return moment if moment.tzinfo is not None else moment.replace(tzinfo=dt.UTC)


def cmd_diff(args: argparse.Namespace) -> str:
    """``handoff diff DIR [A] [B]``: the change to the layers from generation A to B, as a unified diff."""
    from handoff_files.cli.machine import to_json  # noqa: PLC0415 -- imported per command: start-up cost
    from handoff_files.cli.terminal import terminal  # noqa: PLC0415 -- imported per command: start-up cost
    from handoff_files.thread.history import diff_generations  # noqa: PLC0415 -- imported per command
    from handoff_files.thread.locate import thread_of  # noqa: PLC0415 -- imported per command: start-up cost

    diff = diff_generations(thread_of(args.dir).layout, args.before, args.after)
    if args.json:
        return to_json({"from": diff.before, "to": diff.after, "diff": diff.text, "changed": diff.changed})
    if not diff.changed:
        return f"generation {diff.before} to {diff.after}: the layers are the same (only the envelope differs)\n"
    return _painted(diff.text, terminal())


def _painted(diff: str, term: Terminal) -> str:
    """A unified diff for a person: on a colour terminal, its headers bold, removals red and additions green."""
    from handoff_files.cli.terminal import paint  # noqa: PLC0415 -- loaded by cmd_diff already

    if not term.colour:
        return diff
    lines = []
    for line in diff.splitlines():
        if line.startswith(("---", "+++", "@@")):
            lines.append(paint(line, "heading", term))
        elif line.startswith(("-", "+")):
            lines.append(paint(line, "bad" if line[0] == "-" else "good", term))
        else:
            lines.append(line)
    return "\n".join(lines) + "\n"


def follow(args: argparse.Namespace, journal: Journal, entries: Sequence[Entry], problems: Sequence[str]) -> str:
    """``handoff log DIR --follow``: the lines asked for, then each new line as it is written, until Ctrl-C.

    The journal's size is looked at every :data:`FOLLOW_INTERVAL` seconds; when it changed, the
    journal is read again and the lines after the last one seen are printed (a rotation moves the
    older lines to ``journal.1.jsonl``, where they are still read). Ctrl-C ends it: the
    ``KeyboardInterrupt`` goes up to ``main()``, which exits 130 as for every command.

    :param entries: the journal's lines as read before following, oldest first; *problems*, its notes.
    :raises HandoffError: with ``--json`` (one JSON document cannot grow: the parser refuses the two
        together), or if the journal cannot be read.
    """
    from handoff_files.cli.render import timeline  # noqa: PLC0415 -- imported per command: start-up cost
    from handoff_files.foundation.errors import HandoffError  # noqa: PLC0415 -- imported per command
    from handoff_files.thread.history import recent  # noqa: PLC0415 -- imported per command: start-up cost
    from handoff_files.thread.journal import DOCUMENT  # noqa: PLC0415 -- imported per command: start-up cost

    if args.json:
        msg = "--follow prints lines for a person as they come and has no --json: run `handoff log --json --since …`"
        raise HandoffError(journal.path, msg)
    shown = recent(entries, since=args.since, last=args.lines)
    if shown or problems or not entries:  # nothing asked for yet is no news: "(the journal is empty)" would mislead
        sys.stdout.write(timeline(shown, problems))
        sys.stdout.flush()
    last = entries[-1] if entries else None
    noted = set(problems)
    seen = _stamp(journal)
    while True:  # until Ctrl-C
        time.sleep(FOLLOW_INTERVAL)
        now = _stamp(journal)
        if now == seen:
            continue
        seen = now  # taken before the read: a line appended meanwhile changes it again
        read, found = journal.check()
        new = _after(read, last)
        last = read[-1] if read else last
        # a torn tail is most often a line being written right now: it is read whole on the next look
        notes = [p.what for p in found if p.kind != "torn" and p.what not in noted]
        noted.update(notes)
        if any(e.event != DOCUMENT for e in new) or notes:
            sys.stdout.write(timeline(new, notes))
            sys.stdout.flush()


def _stamp(journal: Journal) -> tuple[int, int, int] | None:
    """The journal file's identity, size and time: any append or rotation changes it."""
    try:
        stat = journal.path.stat()
    except FileNotFoundError:
        return None
    return (stat.st_ino, stat.st_size, stat.st_mtime_ns)


def _after(entries: Sequence[Entry], last: Entry | None) -> list[Entry]:
    """The entries after *last*: found from the end, or, if it is gone (rotated away twice), by time."""
    if last is None:
        return list(entries)
    for index in range(len(entries) - 1, -1, -1):
        if entries[index] == last:
            return list(entries[index + 1 :])
    return [e for e in entries if e.at > last.at]
