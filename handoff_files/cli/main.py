"""The ``handoff`` command: a thin shell over the library (parse → one call → render → exit code)."""

from __future__ import annotations

import argparse
import dataclasses
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Final

from handoff_files import __version__
from handoff_files.cli.render import (
    briefing,
    findings_report,
    history_table,
    migration_report,
    request_detail,
    request_table,
    seal_text,
    timeline,
    to_json,
)
from handoff_files.format.codec import MAX_FILE_BYTES, parse
from handoff_files.format.loader import load
from handoff_files.foundation.atomic import read_bytes, write_durable
from handoff_files.foundation.errors import HandoffError, UnknownRequestError
from handoff_files.inbox.lifecycle import DEFAULT_PRIORITY, HandoffInbox, InboxRequest
from handoff_files.inbox.status import HandoffStatus
from handoff_files.thread.doctor import examine
from handoff_files.thread.locate import migrate_path, open_handoff, primary_of, thread_of
from handoff_files.thread.results import SaveReceipt
from handoff_files.thread.store import HandoffStore
from handoff_files.transfer.blobs import open_blobs
from handoff_files.transfer.checkpoint import adopt_checkpoint, handoff_checkpoint

__all__ = ["main"]

EXIT_OK: Final = 0
EXIT_ERROR: Final = 1


def _receipt(receipt: SaveReceipt, args: argparse.Namespace, verb: str) -> str:
    if args.json:
        return to_json(dataclasses.asdict(receipt))
    lines = [f"{verb} generation {receipt.generation} to {receipt.path} ({receipt.checksum})"]
    lines += [f"note: {problem}" for problem in receipt.problems]
    return "\n".join(lines) + "\n"


def cmd_init(args: argparse.Namespace) -> str:
    store = HandoffStore(args.dir, format=args.format)
    store.init()
    return to_json({"path": str(store.path)}) if args.json else f"thread ready at {store.path}\n"


def cmd_save(args: argparse.Namespace) -> str:
    data, name = _read_input(args.file)
    receipt = HandoffStore(args.dir, format=args.format).save(parse(data, name))
    return _receipt(receipt, args, "saved")


def cmd_show(args: argparse.Namespace) -> str:
    restored = open_handoff(args.path, assume_version=args.assume_version)
    if args.json:
        return to_json(
            {
                "source": restored.source,
                "path": str(restored.path),
                "problems": list(restored.problems),
                "handoff": restored.handoff.model_dump(mode="json"),
            }
        )
    return briefing(restored)


def cmd_validate(args: argparse.Namespace) -> str:
    results: list[dict[str, Any]] = []
    for path in args.paths:
        try:
            handoff = load(primary_of(path), assume_version=args.assume_version)
        except HandoffError as exc:
            results.append({"path": path, "ok": False, "error": exc.reason})
            print(_one_line(str(exc)), file=sys.stderr)
        else:
            results.append({"path": path, "ok": True, "generation": handoff.generation, "seal": seal_text(handoff)})
    args.failed = any(not r["ok"] for r in results)
    if args.json:
        return to_json(results)
    return "".join(f"ok {r['path']} (generation {r['generation']}, {r['seal']})\n" for r in results if r["ok"])


def cmd_seal(args: argparse.Namespace) -> str:
    return _receipt(thread_of(args.path).seal(), args, "sealed")


def cmd_migrate(args: argparse.Namespace) -> str:
    report = migrate_path(args.path, dry_run=args.dry_run, assume_version=args.assume_version)
    if args.json:
        return to_json(
            {
                "source": str(report.source),
                "original_version": report.original_version,
                "dry_run": report.dry_run,
                "notes": list(report.notes),
                "receipt": None if report.receipt is None else dataclasses.asdict(report.receipt),
            }
        )
    return migration_report(report)


def _read_input(name: str | None) -> tuple[bytes, str]:
    """The bytes of FILE, or of stdin for ``-`` or no name, with the name errors should give."""
    if name in (None, "-"):
        return sys.stdin.buffer.read(MAX_FILE_BYTES + 1), "<stdin>"
    data, _ = read_bytes(Path(name), MAX_FILE_BYTES)
    return data, name


def cmd_import(args: argparse.Namespace) -> str:
    # imported here: only this command pays for the compat module
    from handoff_files.compat import sw4rm  # noqa: PLC0415

    data, name = _read_input(args.file)
    return _receipt(sw4rm.import_context(data, args.dir, source=name, format=args.format), args, "imported")


def cmd_export_context(args: argparse.Namespace) -> str:
    from handoff_files.compat import sw4rm  # noqa: PLC0415 -- see cmd_import

    data = sw4rm.export_context(args.dir)
    if args.output is None:
        return data.decode("utf-8") + "\n"
    write_durable(Path(args.output), data)
    return to_json({"path": args.output, "bytes": len(data)}) if args.json else f"wrote {args.output}\n"


def cmd_export(args: argparse.Namespace) -> str:
    descriptor = handoff_checkpoint(
        thread_of(args.dir),
        blobs=open_blobs(args.blobs),
        generation=args.generation,
        to_agent=args.to,
        summary=args.summary,
    )
    text = descriptor.to_json() + "\n"
    if args.output is None:
        return text
    write_durable(Path(args.output), text.encode("utf-8"))
    return to_json({"path": args.output, "descriptor": descriptor.model_dump(mode="json")}) if args.json else text


def cmd_adopt(args: argparse.Namespace) -> str:
    data, _ = _read_input(args.descriptor)
    result = adopt_checkpoint(data, args.new_dir, blobs=open_blobs(args.blobs), agent_id=args.agent_id)
    if args.json:
        return to_json({**dataclasses.asdict(result), "receipt": dataclasses.asdict(result.receipt)})
    return (
        f"adopted {result.adopted_from} ({result.checkpoint_id}) as generation {result.receipt.generation} of "
        f"thread {result.new_thread_id}; blob {result.blob_id[:12]}… sha256 and seal verified\n"
    )


def _request(record: InboxRequest, args: argparse.Namespace) -> str:
    return to_json(record.model_dump(mode="json")) if args.json else request_detail(record)


def cmd_inbox_list(args: argparse.Namespace) -> str:
    inbox = HandoffInbox(args.dir)
    records = inbox.list_handoffs(to_agent=args.agent, status=None if args.all else HandoffStatus.PENDING)
    if args.json:
        return to_json(
            {"requests": [r.model_dump(mode="json") for r in records], "problems": [str(p) for p in inbox.problems]}
        )
    return request_table(records, inbox.problems)


def cmd_inbox_request(args: argparse.Namespace) -> str:
    descriptor = None if args.descriptor is None else _read_input(args.descriptor)[0]
    inbox = HandoffInbox(args.dir, registry=args.registry)
    record = inbox.request_handoff(
        args.from_agent,
        args.to,
        args.reason,
        descriptor=descriptor,
        priority=args.priority,
        timeout=args.timeout,
        capabilities_required=args.require,
    )
    if record.status is HandoffStatus.REJECTED:  # refused by the capability gate: shown, but never stored
        print(f"handoff: {inbox.path}: {_one_line(str(record.rejection_reason))}; nothing stored", file=sys.stderr)
        args.failed = True
    return _request(record, args)


def cmd_inbox_accept(args: argparse.Namespace) -> str:
    return _request(HandoffInbox(args.dir).accept_handoff(args.handoff_id), args)


def cmd_inbox_reject(args: argparse.Namespace) -> str:
    return _request(HandoffInbox(args.dir).reject_handoff(args.handoff_id, args.reason), args)


def cmd_inbox_complete(args: argparse.Namespace) -> str:
    return _request(HandoffInbox(args.dir).complete_handoff(args.handoff_id), args)


def cmd_inbox_status(args: argparse.Namespace) -> str:
    record = HandoffInbox(args.dir).get_handoff(args.handoff_id)
    if record is None:
        msg = f"no handoff request {args.handoff_id} in this inbox"
        raise UnknownRequestError(args.dir, msg)
    return _request(record, args)


def cmd_doctor(args: argparse.Namespace) -> str:
    findings = examine(HandoffStore(args.dir), repair=args.repair)
    args.failed = any(f.level in ("error", "unrepaired") for f in findings)
    if args.json:
        return to_json([dataclasses.asdict(f) for f in findings])
    return findings_report(findings)


def cmd_log(args: argparse.Namespace) -> str:
    entries, problems = thread_of(args.dir).journal.entries()
    if args.json:
        return to_json({"entries": [e.brief() for e in entries], "problems": problems})
    return timeline(entries, problems)


def cmd_run(args: argparse.Namespace) -> str:
    # imported here: only this command pays for the supervisor
    from handoff_files.run.supervise import supervise  # noqa: PLC0415

    result = supervise(
        args.dir,
        args.agent_command,
        max_restarts=args.max_restarts,
        ack_timeout=args.ack_timeout,
        on_missing_ack="restart" if args.restart_on_missing_ack else "stop",
    )
    args.failed = result.exit_code != 0
    # the story (restores, deaths, restarts, the reason) went to stderr as it happened; stdout is the agent's
    return to_json(dataclasses.asdict(result)) if args.json else ""


def cmd_history(args: argparse.Namespace) -> str:
    entries = thread_of(args.dir).history()
    if args.json:
        return to_json([dataclasses.asdict(e) for e in entries])
    return history_table(entries)


def build_parser() -> argparse.ArgumentParser:
    """The argument parser: one subcommand per library verb."""
    parser = argparse.ArgumentParser(
        prog="handoff",
        description="Sealed five-layer handoff files: save, show, validate and seal an agent's handoffs.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")

    def add(name: str, func: Callable[[argparse.Namespace], str], help_text: str) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help_text, description=help_text)
        p.add_argument("--json", action="store_true", help="print machine-readable JSON")
        p.set_defaults(func=func)
        return p

    p = add("init", cmd_init, "create a thread directory (mode 0700) ready for saves")
    p.add_argument("dir", help="thread directory")
    p.add_argument("--format", choices=["json", "yaml"], help="primary file format (default: json)")

    p = add("save", cmd_save, "seal the five layers from FILE (JSON or YAML; - or none: stdin) as the next generation")
    p.add_argument("dir", help="thread directory")
    p.add_argument("file", nargs="?", help="content file, JSON or YAML (default: stdin)")
    p.add_argument("--format", choices=["json", "yaml"], help="primary file format for a new thread")

    p = add("show", cmd_show, "show a handoff for a person taking over: narrative, warnings, priorities, state")
    p.add_argument("path", help="thread directory (restored) or handoff file (loaded)")
    p.add_argument("--assume-version", metavar="V", help="the version of a file that does not say")

    p = add("validate", cmd_validate, "verify handoff files; exit 1 if any fails, one line per bad file on stderr")
    p.add_argument("paths", nargs="+", metavar="PATH", help="handoff files or thread directories")
    p.add_argument("--assume-version", metavar="V", help="the version of files that do not say")

    p = add("seal", cmd_seal, "accept a person's edit of the primary as the next sealed generation")
    p.add_argument("path", help="thread directory or its primary file")

    p = add("migrate", cmd_migrate, "rewrite an older (0.8 or 1.0) handoff as the next sealed 2.0 generation")
    p.add_argument("path", help="thread directory (its primary) or the older file inside it")
    p.add_argument("--dry-run", action="store_true", help="show what would change and write nothing")
    p.add_argument("--assume-version", metavar="V", help="the version of a file that does not say")

    p = add(
        "import", cmd_import, "save another framework's context FILE (- for stdin) as the next generation's context"
    )
    p.add_argument("--from", dest="source_format", choices=["sw4rm"], required=True, help="FILE's format")
    p.add_argument("file", help="context file (sw4rm: serialize_context bytes), or - for stdin")
    p.add_argument("dir", help="thread directory")
    p.add_argument("--format", choices=["json", "yaml"], help="primary file format for a new thread")

    p = add("export-context", cmd_export_context, "write a thread's context block in another framework's format")
    p.add_argument("--to", dest="target_format", choices=["sw4rm"], required=True, help="output format")
    p.add_argument("dir", help="thread directory (restored) or handoff file")
    p.add_argument("-o", "--output", help="write exactly these bytes, durably, to FILE instead of stdout")

    _add_transfer_commands(add)

    p = add("doctor", cmd_doctor, "check every channel of a thread and what a person can do; exit 1 on errors")
    p.add_argument("dir", help="thread directory")
    p.add_argument("--repair", action="store_true", help="rebuild what can be rebuilt, and say what could not")

    p = add("log", cmd_log, "show the thread's journal as a readable timeline")
    p.add_argument("dir", help="thread directory")

    p = add("run", cmd_run, "run an agent on a thread: restart it when it dies, check it acknowledges its context")
    p.add_argument("dir", help="thread directory (HANDOFF_DIR in the agent's environment)")
    p.add_argument("--max-restarts", type=int, default=10, metavar="N", help="restarts before giving up (default 10)")
    p.add_argument(
        "--ack-timeout", type=float, default=10.0, metavar="S", help="seconds the agent has to acknowledge (default 10)"
    )
    p.add_argument(
        "--restart-on-missing-ack",
        action="store_true",
        help="restart an agent that does not acknowledge its context (default: stop it and exit 1)",
    )
    p.add_argument("agent_command", nargs="+", metavar="COMMAND", help="the agent's command, after --")

    p = add("history", cmd_history, "list a thread's generations, newest first, each verified")
    p.add_argument("dir", help="thread directory")
    return parser


_Add = Callable[[str, Callable[[argparse.Namespace], str], str], argparse.ArgumentParser]


def _add_transfer_commands(add: _Add) -> None:
    """The subcommands that hand work to another agent: export and adopt a checkpoint, and the inbox of requests."""
    blobs_help = "blob store: a folder or an fsspec URL such as s3://bucket/prefix (default: $HANDOFF_BLOBS)"
    p = add("export", cmd_export, "hand a sealed generation to another agent: store its blob, print the descriptor")
    p.add_argument("dir", help="thread directory")
    p.add_argument("--to", metavar="AGENT", help="the agent meant to adopt it")
    p.add_argument("--blobs", metavar="URL", help=blobs_help)
    p.add_argument("--generation", type=int, metavar="N", help="which generation (default: the newest verified)")
    p.add_argument("--summary", help="a line for the receiver (default: the narrative's first sentence, next step)")
    p.add_argument("-o", "--output", help="also write the descriptor, durably, to FILE")

    p = add("adopt", cmd_adopt, "fetch a descriptor's blob, verify its sha256 and seal, start a new thread with it")
    p.add_argument("descriptor", help="descriptor file (JSON), or - for stdin")
    p.add_argument("new_dir", help="the new thread's directory (missing or empty)")
    p.add_argument("--blobs", metavar="URL", help=blobs_help)
    p.add_argument("--agent-id", help="the adopting agent (default: the directory name)")
    _add_inbox_commands(add)


def _add_inbox_commands(add: _Add) -> None:
    """``handoff inbox DIR ACTION``: the request lifecycle between agents, one action per inbox call."""
    p = add("inbox", cmd_inbox_list, "ask another agent to take work over, and answer such requests (an inbox folder)")
    p.add_argument("dir", metavar="DIR", help="the inbox folder shared by the agents (created on the first request)")
    actions = p.add_subparsers(dest="action", required=True, metavar="ACTION")

    def action(name: str, func: Callable[[argparse.Namespace], str], help_text: str) -> argparse.ArgumentParser:
        q = actions.add_parser(name, help=help_text, description=help_text)
        # SUPPRESS: given before or after ACTION, --json is kept (a subparser's default would reset it)
        q.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help="print machine-readable JSON")
        q.set_defaults(func=func)
        return q

    q = action("list", cmd_inbox_list, "list the pending requests (oldest first), or with --all every request")
    q.add_argument("--agent", metavar="A", help="only the requests addressed to agent A")
    q.add_argument("--all", action="store_true", help="every status, not only PENDING")

    q = action("request", cmd_inbox_request, "ask agent B to take work over; prints the new request")
    q.add_argument("--from", dest="from_agent", required=True, metavar="A", help="the asking agent")
    q.add_argument("--to", metavar="B", help="the agent asked (without it, --registry routes to a capable one)")
    q.add_argument("--reason", required=True, metavar="R", help="why, for the agent deciding")
    q.add_argument(
        "--descriptor", metavar="FILE", help="the checkpoint to adopt: a descriptor (`handoff export`), - for stdin"
    )
    q.add_argument(
        "--priority", type=int, default=DEFAULT_PRIORITY, metavar="N", help="lower is more urgent (default 5)"
    )
    q.add_argument("--timeout", type=float, metavar="S", help="seconds B has to accept (default: no limit)")
    q.add_argument("--require", nargs="+", action="extend", default=[], metavar="CAP", help="capabilities B must have")
    q.add_argument("--registry", metavar="FILE", help="agent registry (JSON or YAML): the capability gate and routing")

    id_help = "the request's id (32 hex digits, as `list` shows it)"
    action(
        "accept", cmd_inbox_accept, "accept a PENDING request (of racing agents, exactly one succeeds)"
    ).add_argument("handoff_id", metavar="ID", help=id_help)
    q = action("reject", cmd_inbox_reject, "reject a PENDING request, with a reason the requester will read")
    q.add_argument("handoff_id", metavar="ID", help=id_help)
    q.add_argument("--reason", required=True, metavar="R", help="why not")
    action("complete", cmd_inbox_complete, "mark an ACCEPTED request COMPLETED: the work was taken over").add_argument(
        "handoff_id", metavar="ID", help=id_help
    )
    action("status", cmd_inbox_status, "show one request in full").add_argument(
        "handoff_id", metavar="ID", help=id_help
    )


def _one_line(text: str) -> str:
    """Errors are one line on stderr: a newline in a key or value named in the message is escaped."""
    return text.replace("\r", "\\r").replace("\n", "\\n")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the CLI; returns the exit code (0 ok, 1 handoff error, 2 usage)."""
    args = build_parser().parse_args(argv)
    args.failed = False
    try:
        output = args.func(args)
    except HandoffError as exc:
        print(f"handoff: {_one_line(str(exc))}", file=sys.stderr)
        return EXIT_ERROR
    except OSError as exc:  # the library wraps what it meets; this is the net under a path it never got to
        print(f"handoff: {_one_line(str(exc))}", file=sys.stderr)
        return EXIT_ERROR
    sys.stdout.write(output)
    return EXIT_ERROR if args.failed else EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
