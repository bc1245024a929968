"""The thread commands: one handler per verb on a thread or a handoff file (parse → one library call → render).

Each handler imports the library modules it uses, so a command pays only for its own: ``show``
never loads the inbox or watchdog (the transfer layer only for a thread that was transferred), and
``--version`` loads none of them.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from handoff_files.cli.commands_show import cmd_show  # re-exported: show's own module, named here as before
from handoff_files.cli.exits import EXIT_UNFINISHED
from handoff_files.cli.machine import DOCTOR_KEYS, RUN_KEYS, as_record, ordered, to_json
from handoff_files.cli.render import (
    findings_report,
    history_table,
    migration_report,
    one_line,
    timeline,
    validation_errors,
    validation_records,
    validation_report,
)
from handoff_files.cli.terminal import short_digest
from handoff_files.foundation.commandline import suggest
from handoff_files.foundation.errors import HandoffError

if TYPE_CHECKING:
    from handoff_files.thread.results import SaveReceipt

__all__ = [
    "cmd_doctor",
    "cmd_export_context",
    "cmd_history",
    "cmd_import",
    "cmd_init",
    "cmd_log",
    "cmd_migrate",
    "cmd_run",
    "cmd_save",
    "cmd_seal",
    "cmd_show",
    "cmd_validate",
    "read_input",
    "receipt_line",
    "signing_options",
]


def _receipt(receipt: SaveReceipt, args: argparse.Namespace, verb: str, *, changed: bool | None = None) -> str:
    """A save's receipt: JSON (with ``changed`` where a command may write nothing), or a line for a person."""
    tell_unfinished(receipt, args, verb)
    if args.json:
        return to_json(as_record(receipt) | ({} if changed is None else {"changed": changed}))
    if changed is False:
        return f"{receipt.path} is already sealed (generation {receipt.generation}, {short_digest(receipt.checksum)})\n"
    lines = [receipt_line(receipt, verb)]
    lines += [f"note: {problem}" for problem in receipt.problems]
    return "\n".join(lines) + "\n"


def receipt_line(receipt: SaveReceipt, verb: str, what: str = "") -> str:
    """A save's line for a person: its generation and the file it went to; *what* says what was saved.

    A save left unfinished names its thread, never the primary: that may be the copy not written.
    """
    of = f", {what}," if what else ""
    digest = short_digest(receipt.checksum)
    if receipt.unfinished:
        return (
            f"{verb} generation {receipt.generation}{of} in {receipt.path.parent} ({digest}): committed, "
            "but not every copy was written (said above)"
        )
    signed = f", signed by {receipt.signed_by}" if receipt.signed_by else ""
    return f"{verb} generation {receipt.generation}{of} to {receipt.where} ({digest}){signed}"


STDIN = "<stdin>"


def tell_unfinished(receipt: SaveReceipt, args: argparse.Namespace, verb: str) -> None:
    """A committed save with a copy left unwritten: exit 3, one line per copy, and say not to save again."""
    if not receipt.unfinished:
        return
    # committed: the generation exists; saying "failed" would invite a retry, a second generation
    args.exit_code = EXIT_UNFINISHED
    for what in receipt.unfinished:
        told = f"handoff: {verb} generation {receipt.generation}, but left unfinished: {one_line(what)}"
        print(told, file=sys.stderr)
    print(
        f"handoff: do not save again; {suggest('handoff', 'doctor', '--repair', receipt.path.parent)} "
        "writes what is missing",
        file=sys.stderr,
    )


def lock_options(args: argparse.Namespace) -> dict[str, Any]:
    """The store keywords for ``--wait`` (how long to wait for the writers' lock, telling the person
    who holds it), for the ids a command takes, and for ``--sign-with`` / ``--no-sign``."""
    from handoff_files.foundation.lock import DEFAULT_LOCK_TIMEOUT, LockWait  # noqa: PLC0415

    def waiting(wait: LockWait) -> None:
        holder = f"held by {wait.holder}" if wait.holder else "held by a writer that did not say who it is"
        limit = "--wait 0 fails at once" if wait.waited == 0 else f"{wait.waited:.0f} s so far"
        print(
            f"handoff: waiting for the writers' lock of {wait.directory}, {holder} ({limit}; "
            f"giving up after {wait.timeout:g} s)",
            file=sys.stderr,
            flush=True,
        )

    options: dict[str, Any] = {
        "lock_timeout": DEFAULT_LOCK_TIMEOUT if args.wait is None else args.wait,
        "on_lock_wait": waiting,
    }
    for name in ("thread_id", "agent_id"):  # a first save's ids, where the command takes them
        if getattr(args, name, None) is not None:
            options[name] = getattr(args, name)
    return options | signing_options(args)


def signing_options(args: argparse.Namespace) -> dict[str, Any]:
    """The store keyword for ``--sign-with KEYFILE`` / ``--no-sign`` (none: the configured key, if any)."""
    if getattr(args, "sign_with", None) is not None:
        return {"signing_key": args.sign_with}
    if getattr(args, "no_sign", False):
        return {"signing_key": False}
    return {}


def read_input(name: str | None) -> tuple[bytes, str]:
    """The bytes of FILE, or of stdin for ``-`` or no name, with the name errors should give.

    :raises HandoffError: if FILE cannot be read or is over the size limit.
    """
    from handoff_files.format.codec import MAX_FILE_BYTES  # noqa: PLC0415 -- imported per command: start-up cost
    from handoff_files.foundation.atomic import read_bytes  # noqa: PLC0415 -- imported per command: start-up cost

    if name in (None, "-"):
        if sys.stdin.isatty():
            # waiting silently on a terminal looks like a hang: say what was expected instead
            msg = "no content file given and stdin is a terminal: pass FILE, or pipe it in (… | handoff save DIR -)"
            raise HandoffError(STDIN, msg)
        return sys.stdin.buffer.read(MAX_FILE_BYTES + 1), STDIN
    data, _ = read_bytes(Path(name), MAX_FILE_BYTES)
    return data, name


def cmd_init(args: argparse.Namespace) -> str:
    """``handoff init DIR``."""
    from handoff_files.thread.store import HandoffStore  # noqa: PLC0415 -- imported per command: start-up cost

    store = HandoffStore(args.dir, format=args.format, **lock_options(args))
    ready = store.init()
    if args.json:
        mode = f"{ready.mode:04o}"
        return to_json({"path": str(store.path), "created": ready.created, "mode": mode, "note": ready.note})
    return f"thread ready at {store.path}\n" + (f"note: {ready.note}\n" if ready.note else "")


def cmd_save(args: argparse.Namespace) -> str:
    """``handoff save DIR [FILE]``."""
    from handoff_files.format.codec import parse  # noqa: PLC0415 -- imported per command: start-up cost
    from handoff_files.format.content import layers_of  # noqa: PLC0415 -- imported per command: start-up cost
    from handoff_files.thread.store import HandoffStore  # noqa: PLC0415 -- imported per command: start-up cost

    data, name = read_input(args.file)
    layers = layers_of(parse(data, name), Path(name))  # checked here, so a field not allowed names FILE
    receipt = HandoffStore(args.dir, format=args.format, **lock_options(args)).save(layers, durability=args.durability)
    return _receipt(receipt, args, "saved")


def cmd_validate(args: argparse.Namespace) -> str:
    """``handoff validate PATH...``: ``ok`` lines on stdout, one ``handoff: FILE: REASON`` line per bad one on stderr.

    Exit 1 if any failed. The stderr lines are written with ``--json`` too; stdout is then a
    list with one entry per PATH, in order, every entry of one shape::

        {"path": "t1", "ok": true, "generation": 3, "seal": "blake3:…", "kind": null, "error": null}
        {"path": "t2", "ok": false, "generation": null, "seal": null,
         "kind": "UnsealedEditError", "error": "edited after sealing: …"}

    ``path`` is the PATH as given; ``kind`` is the name of the :class:`HandoffError` subclass
    (``HandoffNotFoundError``, ``HandoffParseError``, ``ChecksumMismatchError`` …; plain
    ``HandoffError`` for a path that cannot be read or a refused symbolic link), ``error`` its
    reason.
    """
    from handoff_files.thread.validate import validate  # noqa: PLC0415 -- imported per command: start-up cost

    results = validate(args.paths, assume_version=args.assume_version)
    # one `path: reason` line per bad file (one_line escapes any newline), prefixed as main() prefixes an error
    sys.stderr.writelines(f"handoff: {line}\n" for line in validation_errors(results).split("\n") if line)
    args.failed = not all(r.ok for r in results)
    if not args.json:
        return validation_report(results)
    return to_json(
        [
            {
                "path": r.path,
                "ok": r.ok,
                "generation": None,
                "seal": None,
                "kind": None if r.error is None else type(r.error).__name__,
                "error": None,
            }
            | record  # fills generation and seal, or the error's reason
            for r, record in zip(results, validation_records(results), strict=True)
        ]
    )


def cmd_seal(args: argparse.Namespace) -> str:
    """``handoff seal PATH``."""
    from handoff_files.foundation.errors import ChecksumMismatchError  # noqa: PLC0415
    from handoff_files.thread.edits import Edit, read_edit  # noqa: PLC0415
    from handoff_files.thread.locate import thread_of  # noqa: PLC0415 -- imported per command: start-up cost

    store = thread_of(args.path, **lock_options(args))
    try:
        pending = read_edit(store.layout, store.primary, restore=store.restore)
    except ChecksumMismatchError:
        # not rewritten since it was sealed, so it reads as corrupt: a person may still say it is theirs
        pending = read_edit(store.layout, store.primary, accept_corrupt=True, restore=store.restore)
    if isinstance(pending, Edit):
        print(pending.diff() or "(the layers are unchanged: only the seal differs)", file=sys.stderr, end="")
        if pending.corrupt and not (args.yes or _confirmed(f"seal {store.primary.name} as the next generation?")):
            msg = (
                "was not rewritten since it was sealed, so it reads as corrupt, not as an edit; the change is "
                "shown above: if it is yours, `handoff seal --yes` seals it (else `handoff doctor --repair`)"
            )
            raise ChecksumMismatchError(store.primary, msg)
    receipt = store.seal(accept_corrupt=args.yes or isinstance(pending, Edit))
    # nothing to seal: the library hands back the current generation's receipt, with the seal read above
    changed = isinstance(pending, Edit) or receipt.checksum != str(pending.seal)
    if not changed:  # its one note, "already sealed: nothing to do", is said by `changed: false` instead
        receipt = dataclasses.replace(receipt, problems=())
    return _receipt(receipt, args, "sealed", changed=changed)


def _confirmed(question: str) -> bool:
    """Ask a person on a terminal; anything but yes is no (never asked without one: scripts pass --yes)."""
    if not sys.stdin.isatty():
        return False
    print(f"handoff: {question} [y/N] ", file=sys.stderr, end="", flush=True)
    return sys.stdin.readline().strip().lower() in ("y", "yes")


def cmd_migrate(args: argparse.Namespace) -> str:
    """``handoff migrate PATH``."""
    from handoff_files.thread.locate import migrate_path  # noqa: PLC0415 -- imported per command: start-up cost

    report = migrate_path(args.path, dry_run=args.dry_run, assume_version=args.assume_version, **lock_options(args))
    if args.json:
        return to_json(
            {
                "source": report.source,
                "original_version": report.original_version,
                "dry_run": report.dry_run,
                "changed": report.receipt is not None,  # this run wrote a generation
                "notes": list(report.notes),
                "receipt": None if report.receipt is None else as_record(report.receipt),
            }
        )
    return migration_report(report)


def cmd_import(args: argparse.Namespace) -> str:
    """``handoff import --from sw4rm THREAD FILE`` (``FILE THREAD``, the older order, when it can be told apart)."""
    # imported here: only this command and export-context pay for the compat module (the sanctioned use)
    from handoff_files.compat import sw4rm  # noqa: PLC0415 -- see the comment above

    thread, file = _import_order(args.dir, args.file)
    data, name = read_input(file)
    receipt = sw4rm.import_context(data, thread, source=name, format=args.format, **lock_options(args))
    return _receipt(receipt, args, "imported")


def _import_order(thread: str, file: str) -> tuple[str, str]:
    """THREAD and FILE as the command line gave them, or swapped when they were given in the older order, FILE THREAD.

    A thread is a directory (or a name to make one), never a file: a first word that is a file (or
    ``-``) before a second that is not is the older order, read as such with a note.

    :raises HandoffValidationError: for two files (or two ``-``), saying what the order is.
    """
    from handoff_files.foundation.errors import HandoffValidationError  # noqa: PLC0415 -- only a refusal needs it

    order = "the order is `handoff import --from sw4rm THREAD FILE`, as for save"

    def is_file(name: str) -> bool:
        return name == "-" or Path(name).is_file()

    if is_file(thread) and is_file(file):
        msg = f"{thread} and {file} are both files, and THREAD is a thread directory: {order}"
        raise HandoffValidationError(thread, msg)
    if is_file(thread):
        print(f"handoff: note: {order}; FILE THREAD is still read when it can be told apart", file=sys.stderr)
        return file, thread
    return thread, file


def cmd_export_context(args: argparse.Namespace) -> str:
    """``handoff export-context --to sw4rm DIR``."""
    from handoff_files.compat import sw4rm  # noqa: PLC0415 -- see cmd_import
    from handoff_files.foundation.output import write_output  # noqa: PLC0415 -- imported per command: start-up cost

    data = sw4rm.export_context(args.dir)
    if args.output is not None:
        write_output(args.output, data)
    if args.json:  # the context as a JSON value, beside where its exact bytes went (if anywhere)
        context = json.loads(data)
        return to_json({"format": args.target_format, "path": args.output, "bytes": len(data), "context": context})
    return data.decode("utf-8") + "\n" if args.output is None else f"wrote {args.output}\n"


def cmd_doctor(args: argparse.Namespace) -> str:
    """``handoff doctor DIR`` (or its primary file): exit 1 on errors and on what could not be repaired."""
    from handoff_files.thread.doctor import examine, failed  # noqa: PLC0415 -- imported per command: start-up cost
    from handoff_files.thread.kind import thread_kind  # noqa: PLC0415 -- imported per command: start-up cost
    from handoff_files.thread.locate import thread_of  # noqa: PLC0415 -- imported per command: start-up cost

    store = thread_of(args.dir, **lock_options(args))
    findings = examine(store, repair=args.repair)
    if not store.where.startswith("s3://") and thread_kind(store.layout) == "langgraph":  # its writes/, blobs/ too
        from handoff_files.langgraph.checkup import examine_saver_files  # noqa: PLC0415 -- a saver's thread only

        findings += examine_saver_files(store.path)
    args.failed = failed(findings)
    if args.json:
        return to_json([ordered(dataclasses.asdict(f), DOCTOR_KEYS) for f in findings])
    return findings_report(findings)


def cmd_log(args: argparse.Namespace) -> str:
    """``handoff log DIR [-n N] [--since WHEN] [--follow]``."""
    from handoff_files.thread.history import recent  # noqa: PLC0415 -- imported per command: start-up cost
    from handoff_files.thread.locate import thread_of  # noqa: PLC0415 -- imported per command: start-up cost

    store = thread_of(args.dir)
    if store.where.startswith("s3://"):  # a bucket journals events as objects, and saves only in history/
        if args.follow:
            raise HandoffError(store.where, "--follow reads a folder's journal as it grows; on a bucket, watch() it")
        entries, problems = store.timeline()  # type: ignore[attr-defined]  # a BucketThreadStore's
    else:
        entries, problems = store.journal.entries()
        if args.follow:
            from handoff_files.cli.commands_history import follow  # noqa: PLC0415 -- only --follow loops

            return follow(args, store.journal, entries, problems)
    shown = recent(entries, since=args.since, last=args.lines)
    if args.json:
        return to_json({"entries": [e.brief() for e in shown], "problems": problems})
    return timeline(shown, problems, among=entries)


def cmd_run(args: argparse.Namespace) -> str:
    """``handoff run DIR -- COMMAND...``: the agent's exit code decides ours."""
    from handoff_files.run.supervise import supervise  # noqa: PLC0415 -- imported per command: start-up cost

    result = supervise(
        args.dir,
        args.agent_command,
        max_restarts=args.max_restarts,
        ack_timeout=args.ack_timeout,
        on_missing_ack="restart" if args.restart_on_missing_ack else "stop",
        require_code=args.require_code,
    )
    args.exit_code = result.exit_code  # 0, 1, or 128 + the signal that stopped the run
    # the story (restores, deaths, restarts, the reason) went to stderr as it happened; stdout is the agent's
    return to_json(ordered(dataclasses.asdict(result), RUN_KEYS)) if args.json else ""


def cmd_history(args: argparse.Namespace) -> str:
    """``handoff history DIR``."""
    from handoff_files.thread.locate import thread_of  # noqa: PLC0415 -- imported per command: start-up cost
    from handoff_files.thread.pins import pin_of  # noqa: PLC0415 -- imported per command: start-up cost

    store = thread_of(args.dir)
    entries = store.history()
    if args.json:
        return to_json([as_record(e) for e in entries])
    try:
        held = pin_of(store.where)
    except HandoffError:  # a record that cannot be read: the list is the library's, as a restore gives it
        held = None
    if held is None:
        return history_table(entries)
    head = f"pinned to signed generations since {held.pinned_at}: a generation no trusted key signed is passed over\n"
    return head + history_table(entries, pinned=True)
