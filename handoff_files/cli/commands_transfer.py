"""The transfer commands: export and adopt a checkpoint, and the inbox of requests between agents.

As in :mod:`handoff_files.cli.commands`, each handler imports the library modules it uses: the
transfer layer, fsspec and the inbox are loaded only by the commands that need them.
"""

from __future__ import annotations

import argparse
import dataclasses
import logging
import sys
from typing import TYPE_CHECKING, Any

from handoff_files.cli.commands import read_input, signing_options
from handoff_files.cli.machine import as_record, to_json
from handoff_files.cli.render import one_line
from handoff_files.cli.render_inbox import request_detail, request_table
from handoff_files.foundation.errors import HandoffValidationError

if TYPE_CHECKING:
    from handoff_files.inbox.lifecycle import HandoffInbox, InboxRequest

__all__ = [
    "cmd_adopt",
    "cmd_export",
    "cmd_inbox_accept",
    "cmd_inbox_complete",
    "cmd_inbox_list",
    "cmd_inbox_reject",
    "cmd_inbox_request",
    "cmd_inbox_status",
]


def cmd_export(args: argparse.Namespace) -> str:
    """``handoff export DIR``: prints the descriptor (and writes it with ``-o``)."""
    from handoff_files.foundation.output import write_output  # noqa: PLC0415 -- imported per command: start-up cost
    from handoff_files.thread.locate import thread_of  # noqa: PLC0415 -- imported per command: start-up cost
    from handoff_files.transfers.blobs import open_blobs  # noqa: PLC0415 -- imported per command: start-up cost
    from handoff_files.transfers.export import handoff_checkpoint  # noqa: PLC0415 -- per command: start-up cost

    descriptor = handoff_checkpoint(
        thread_of(args.dir),
        blobs=open_blobs(args.blobs, shared=args.shared),
        generation=args.generation,
        to_agent=args.to,
        summary=args.summary,
        **signing_options(args),
    )
    text = descriptor.to_json() + "\n"
    if args.output is not None:
        write_output(args.output, text.encode("utf-8"))
    # with or without -o, --json prints the descriptor alone, so it pipes into `handoff adopt -` as the text does
    return to_json(descriptor.model_dump(mode="json")) if args.json else text


def cmd_adopt(args: argparse.Namespace) -> str:
    """``handoff adopt DESCRIPTOR NEW_DIR``."""
    from handoff_files.transfers.adopt import adopt_checkpoint  # noqa: PLC0415 -- per command: start-up cost
    from handoff_files.transfers.blobs import open_blobs  # noqa: PLC0415 -- imported per command: start-up cost

    data, where = read_input(args.descriptor)
    blobs = open_blobs(args.blobs, shared=args.shared)
    result = adopt_checkpoint(
        data,
        args.new_dir,
        blobs=blobs,
        agent_id=args.agent_id,
        require_signed=args.require_signed,
        where=where,  # errors name the descriptor's file (or <stdin>)
        **signing_options(args),
    )
    if args.json:
        reports = {
            name: None if report is None else dataclasses.asdict(report)
            for name, report in (("signature", result.signature), ("descriptor_signature", result.descriptor_signature))
        }
        return to_json({**dataclasses.asdict(result), "receipt": as_record(result.receipt), **reports})
    signer = "unsigned" if result.signature is None else result.signature.describe()
    sender = result.descriptor_signature
    sent = "unsigned" if sender is None else sender.describe()
    return (
        f"adopted {result.adopted_from} ({result.checkpoint_id}), {one_line(signer)}, as generation "
        f"{result.receipt.generation} of thread {result.new_thread_id}; blob {result.blob_id[:12]}… sha256 and seal "
        f"verified\n  descriptor: {one_line(sent)}\n  addressed to: {result.to_agent or 'no agent named'}\n"
    )


def _inbox(args: argparse.Namespace, **extra: Any) -> HandoffInbox:
    """The inbox the command names, with its options: --shared, --sign-with / --no-sign, --require-signed."""
    from handoff_files.inbox.lifecycle import HandoffInbox  # noqa: PLC0415 -- imported per command: start-up cost

    options = {"shared": args.shared, "require_signed": getattr(args, "require_signed", False)}
    return HandoffInbox(args.dir, **options, **signing_options(args), **extra)


def _request(record: InboxRequest, args: argparse.Namespace) -> str:
    if not args.json:
        return request_detail(record)
    document = record.model_dump(mode="json")
    if record.refused_by is not None:  # never stored: no request has its id, so none is given to be used
        document["handoff_id"] = None
    return to_json(document)


class _ToldBelow(logging.Filter):
    """Drops the inbox's "skipped a damaged request" warnings: ``inbox list`` prints each as a note of its own."""

    def filter(self, record: logging.LogRecord) -> bool:
        return not record.getMessage().startswith("handoff inbox: skipped")


def cmd_inbox_list(args: argparse.Namespace) -> str:
    """``handoff inbox DIR list``: the pending requests, or with ``--all`` every one, most urgent first; short ids."""
    from handoff_files.inbox.status import HandoffStatus  # noqa: PLC0415 -- imported per command: start-up cost

    inbox = _inbox(args)
    skipped = logging.getLogger("handoff_files.inbox.lifecycle")
    told = _ToldBelow()  # each skipped request is a note in what this prints: not on stderr as well
    skipped.addFilter(told)
    try:
        records = inbox.list_handoffs(to_agent=args.agent, status=None if args.all else HandoffStatus.PENDING)
    finally:
        skipped.removeFilter(told)
    if args.json:
        return to_json(
            {"requests": [r.model_dump(mode="json") for r in records], "problems": [str(p) for p in inbox.problems]}
        )
    return request_table(records, inbox.problems, short_ids=inbox.abbreviate_ids())


def cmd_inbox_request(args: argparse.Namespace) -> str:
    """``handoff inbox DIR request``: exit 1 when the capability gate refuses it (nothing is stored then)."""
    from handoff_files.inbox.lifecycle import DEFAULT_PRIORITY  # noqa: PLC0415 -- imported per command: start-up cost
    from handoff_files.transfers.descriptor import parse_descriptor  # noqa: PLC0415 -- per command: start-up cost

    # parsed here, so that what is wrong with it names its file (or <stdin>)
    descriptor = None
    if args.descriptor is not None:
        data, where = read_input(args.descriptor)
        descriptor = parse_descriptor(data, where=where)
    inbox = _inbox(args, registry=args.registry)
    if args.to is None and inbox.registry is None:
        msg = "name the agent asked with --to: this inbox has no agent registry (--registry) to route the request by"
        raise HandoffValidationError(inbox.where, msg)
    record = inbox.request_handoff(
        args.from_agent,
        args.to,
        args.reason,
        descriptor=descriptor,
        # the parser leaves the default to the library: it never imports the inbox just to build --help
        priority=DEFAULT_PRIORITY if args.priority is None else args.priority,
        timeout=args.timeout,
        capabilities_required=args.require,
    )
    if record.refused_by is not None:  # refused by the capability gate: shown, but never stored
        print(f"handoff: {inbox.where}: {one_line(str(record.rejection_reason))}; nothing stored", file=sys.stderr)
        args.failed = True
    return _request(record, args)


def cmd_inbox_accept(args: argparse.Namespace) -> str:
    """``handoff inbox DIR accept ID`` (ID: a unique prefix will do)."""
    inbox = _inbox(args)
    return _request(inbox.accept_handoff(inbox.resolve_id(args.handoff_id)), args)


def cmd_inbox_reject(args: argparse.Namespace) -> str:
    """``handoff inbox DIR reject ID --reason R`` (ID: a unique prefix will do)."""
    inbox = _inbox(args)
    return _request(inbox.reject_handoff(inbox.resolve_id(args.handoff_id), args.reason), args)


def cmd_inbox_complete(args: argparse.Namespace) -> str:
    """``handoff inbox DIR complete ID`` (ID: a unique prefix will do)."""
    inbox = _inbox(args)
    return _request(inbox.complete_handoff(inbox.resolve_id(args.handoff_id)), args)


def cmd_inbox_status(args: argparse.Namespace) -> str:
    """``handoff inbox DIR status ID`` (ID: a unique prefix will do)."""
    inbox = _inbox(args)
    return _request(inbox.require_handoff(inbox.resolve_id(args.handoff_id)), args)
