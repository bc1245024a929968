"""The editing commands: ``handoff edit`` (a private copy in the person's editor) and ``handoff set KEY=VALUE``.

Only argparse and the standard library are imported here: :func:`register` runs whenever the
parser is built (``handoff --help`` too), and each handler imports the library modules it uses.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import shlex
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from handoff_files.cli.arguments import assignment

if TYPE_CHECKING:
    from handoff_files.thread.handedit import EditOutcome
    from handoff_files.thread.results import SaveReceipt

__all__ = ["cmd_edit", "cmd_set", "editor_command", "register"]

#: The editor when neither ``VISUAL`` nor ``EDITOR`` names one, as ``crontab -e`` and git choose.
DEFAULT_EDITOR: Final = "vi"

Add = Callable[[str, Callable[[argparse.Namespace], str], str], argparse.ArgumentParser]


def register(add: Add) -> None:
    """Add ``edit`` and ``set`` through *add* (``main.build_parser``'s ``add(name, handler, help)``)."""
    p = add(
        "edit",
        cmd_edit,
        "edit the layers in $VISUAL or $EDITOR (a private copy of the primary) and save them as the next generation",
    )
    p.add_argument("path", metavar="THREAD", help="thread directory or its primary file")
    _wait_option(p)

    p = add(
        "set",
        cmd_set,
        "change the layers at dotted keys (KEY=VALUE, KEY+=VALUE appends; VALUE is JSON, else text, and a "
        "number that would not read back as typed, such as 1.10, is kept as text) and save them as the next generation",
    )
    p.add_argument("path", metavar="THREAD", help="thread directory or its primary file")
    p.add_argument(
        "assignments",
        nargs="+",
        type=assignment,
        metavar="KEY=VALUE",
        help="e.g. state.data.ported=12, narrative='…', 'state.active_tasks+=port the rest', priorities.0.task=tidy",
    )
    p.add_argument("--dry-run", action="store_true", help="show the change as a diff and write nothing")
    _wait_option(p)


def _wait_option(p: argparse.ArgumentParser) -> None:
    """``--wait S``, unless the parser's ``add`` gave it already (main adds it to the commands it knows write)."""
    from handoff_files.cli.arguments import wait  # noqa: PLC0415 -- argparse types only: cheap at parser build

    with contextlib.suppress(argparse.ArgumentError):  # already there: the one `add` gave is the same option
        p.add_argument(
            "--wait",
            type=wait,
            metavar="S",
            help="seconds to wait for another writer's lock, saying who holds it (default 30; 0: fail at once)",
        )


def editor_command(environ: dict[str, str] | None = None) -> list[str]:
    """The editor's command line: ``$VISUAL``, else ``$EDITOR``, else ``vi``, split as a shell splits words.

    :raises HandoffError: if the variable cannot be split (an unclosed quote).
    """
    from handoff_files.foundation.errors import HandoffError  # noqa: PLC0415 -- imported per command

    env = os.environ if environ is None else environ
    name = next((n for n in ("VISUAL", "EDITOR") if env.get(n, "").strip()), None)
    raw = DEFAULT_EDITOR if name is None else env[name]
    try:
        return shlex.split(raw)
    except ValueError as exc:
        variable = f"${name}"
        msg = f"{raw!r} cannot be split into words as a shell would ({exc}): fix the variable"
        raise HandoffError(variable, msg) from exc


def cmd_edit(args: argparse.Namespace) -> str:
    """``handoff edit THREAD``: the editor on a private copy; a valid change of the layers becomes the next generation.

    An invalid edit is kept (its path printed, never deleted) and exits 1; on a terminal the
    person may reopen the editor on it first.
    """
    from handoff_files.foundation.errors import HandoffError  # noqa: PLC0415 -- imported per command
    from handoff_files.thread.handedit import discard, finish, prepare  # noqa: PLC0415 -- imported per command
    from handoff_files.thread.locate import thread_of  # noqa: PLC0415 -- imported per command

    command = editor_command()
    store = thread_of(args.path, **_lock_options(args))
    copy = prepare(store)
    if copy.note:  # the primary did not verify: the copy is of the newest verified generation instead
        print(f"handoff: {copy.note}", file=sys.stderr)
    path = copy.path
    try:
        while True:
            _run_editor(command, path, discard)
            outcome = finish(store, path)
            if outcome.status != "invalid" or not _reopen(outcome):
                break
    except (HandoffError, KeyboardInterrupt):
        if path.exists():  # saved, or never edited and removed: nothing to tell
            _tell_kept(path)
        raise
    if outcome.error is not None:
        if outcome.diff:  # a conflict: the change, so the person can redo it on the newer generation
            print(outcome.diff, file=sys.stderr, end="")
        _tell_kept(path)
        raise outcome.error
    return _edit_report(outcome, args)


def _run_editor(command: list[str], path: Path, discard: Callable[[Path], None]) -> None:
    """Run the editor on *path* and wait; a failed start removes the (unedited) copy, a failed exit keeps it."""
    import subprocess  # noqa: PLC0415 -- only `edit` runs a program: the parser's build never pays for it

    from handoff_files.foundation.errors import HandoffError  # noqa: PLC0415 -- imported per command

    try:
        done = subprocess.run([*command, os.fspath(path)], check=False)
    except OSError as exc:
        discard(path)  # the editor never ran: nothing of the person's is in the copy
        msg = f"could not run the editor {command[0]!r} ({exc.strerror or exc}): set VISUAL or EDITOR to one"
        raise HandoffError(path, msg) from exc
    if done.returncode != 0:
        msg = f"the editor ({shlex.join(command)}) exited with status {done.returncode}: the edit was not read back"
        raise HandoffError(path, msg)


def _reopen(outcome: EditOutcome) -> bool:
    """On a terminal, say why the edit was refused and ask: reopen the editor (r) or keep the file aside (k)."""
    if not sys.stdin.isatty():
        return False
    print(f"handoff: {outcome.error}", file=sys.stderr)
    print("handoff: (r)eopen the editor, or (k)eep the file aside? [r/k] ", file=sys.stderr, end="", flush=True)
    return sys.stdin.readline().strip().lower() in ("r", "reopen")


def _tell_kept(path: Path) -> None:
    print(f"handoff: nothing was saved; the edit is kept at {path}", file=sys.stderr)


def _edit_report(outcome: EditOutcome, args: argparse.Namespace) -> str:
    if outcome.diff and not args.json:
        print(outcome.diff, file=sys.stderr, end="")
    if args.json:
        from handoff_files.cli.machine import to_json  # noqa: PLC0415 -- imported per command

        return to_json(
            {
                "status": outcome.status,
                "changed": outcome.receipt is not None,
                "from_generation": outcome.generation,
                "diff": outcome.diff,
                "receipt": _receipt_record(outcome.receipt, args, "saved"),
            }
        )
    if outcome.receipt is None:
        return f"no change to the layers of generation {outcome.generation}: nothing was saved\n"
    return _receipt_line(outcome.receipt, args, "saved", f"the edit of generation {outcome.generation}")


def cmd_set(args: argparse.Namespace) -> str:
    """``handoff set THREAD KEY=VALUE...``: the changed layers as the next generation (``--dry-run``: the diff only)."""
    from handoff_files.thread.assignments import assign, parse_assignment  # noqa: PLC0415 -- imported per command
    from handoff_files.thread.locate import thread_of  # noqa: PLC0415 -- imported per command

    store = thread_of(args.path, **_lock_options(args))
    changes = [parse_assignment(text, store.path) for text in args.assignments]
    done = assign(store, changes, dry_run=args.dry_run)
    if args.json:
        from handoff_files.cli.machine import to_json  # noqa: PLC0415 -- imported per command

        return to_json(
            {
                "dry_run": done.dry_run,
                "changed": done.receipt is not None,
                "from_generation": done.generation,
                "diff": done.diff,
                "problems": list(done.problems),
                "receipt": _receipt_record(done.receipt, args, "set"),
            }
        )
    for problem in done.problems:
        print(f"handoff: note: {problem}", file=sys.stderr)
    if not done.diff:
        return f"no change to the layers of generation {done.generation}: nothing was saved\n"
    if done.receipt is None:  # a dry run: the diff is what it reports
        return done.diff
    print(done.diff, file=sys.stderr, end="")
    return _receipt_line(done.receipt, args, "saved", f"a change of generation {done.generation}")


def _lock_options(args: argparse.Namespace) -> dict[str, Any]:
    from handoff_files.cli.commands import lock_options  # noqa: PLC0415 -- imported per command

    return lock_options(args)


def _receipt_record(receipt: SaveReceipt | None, args: argparse.Namespace, verb: str) -> dict[str, Any] | None:
    """The receipt for ``--json`` (null when nothing was saved), telling an unfinished save on stderr."""

    from handoff_files.cli.commands import tell_unfinished  # noqa: PLC0415 -- imported per command
    from handoff_files.cli.machine import as_record  # noqa: PLC0415 -- imported per command

    if receipt is None:
        return None
    tell_unfinished(receipt, args, verb)
    return as_record(receipt)


def _receipt_line(receipt: SaveReceipt, args: argparse.Namespace, verb: str, what: str) -> str:
    from handoff_files.cli.commands import receipt_line, tell_unfinished  # noqa: PLC0415 -- imported per command

    tell_unfinished(receipt, args, verb)
    lines = [receipt_line(receipt, verb, what)]
    lines += [f"note: {problem}" for problem in receipt.problems]
    return "\n".join(lines) + "\n"
