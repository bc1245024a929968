"""The parser of the commands that hand work to another agent: export, adopt, and the inbox of requests."""

from __future__ import annotations

import argparse
from collections.abc import Callable

from handoff_files.cli.agents_parser import Add
from handoff_files.cli.arguments import OUTPUT_RULE, agent, positive, seconds
from handoff_files.cli.lazy import handler

__all__ = ["add_transfer_commands"]


def add_transfer_commands(add: Add) -> None:
    """The subcommands that hand work to another agent: export and adopt a checkpoint, and the inbox of requests."""
    blobs_help = "blob store: a folder, s3://bucket/prefix or another fsspec URL (default: $HANDOFF_BLOBS)"
    shared_help = "a folder --blobs in group-shared mode: folders it creates 2770, blobs 0660"
    p = add(
        "export",
        handler("commands_transfer", "export"),
        "hand a sealed generation to another agent: store its blob, print the descriptor",
    )
    p.add_argument("dir", metavar="THREAD", help="thread directory")
    p.add_argument("--to", type=agent, metavar="AGENT", help="the agent meant to adopt it")
    p.add_argument("--blobs", metavar="URL", help=blobs_help)
    p.add_argument("--shared", action="store_true", help=shared_help)
    p.add_argument("--generation", type=positive, metavar="N", help="which generation (default: the newest verified)")
    p.add_argument("--summary", help="a line for the receiver (default: the narrative's first sentence, next step)")
    p.add_argument("-o", "--output", metavar="FILE", help=f"also write the descriptor to FILE: {OUTPUT_RULE}")
    signing = p.add_mutually_exclusive_group()
    signing.add_argument(
        "--sign-with",
        metavar="KEYFILE",
        help="sign the descriptor (version 1.1) with this OpenSSH Ed25519 key (default: the configured key, if any)",
    )
    signing.add_argument(
        "--no-sign", action="store_true", help="do not sign (a 1.0 descriptor), even with a key configured"
    )

    p = add(
        "adopt",
        handler("commands_transfer", "adopt"),
        "fetch a descriptor's blob, verify its sha256 and seal, start a new thread with it",
    )
    p.add_argument("descriptor", metavar="DESCRIPTOR", help="descriptor file (JSON), or - for stdin")
    p.add_argument("new_dir", metavar="NEW_THREAD", help="the new thread's directory (missing or empty)")
    p.add_argument("--blobs", metavar="URL", help=blobs_help)
    p.add_argument("--shared", action="store_true", help=shared_help)
    p.add_argument("--agent-id", type=agent, metavar="AGENT", help="the adopting agent (default: the directory name)")
    p.add_argument(
        "--require-signed",
        action="store_true",
        help="refuse a checkpoint or descriptor not signed by a key allowed_signers trusts (who signed is said anyway)",
    )
    _add_inbox_commands(add)


def _inbox_options(p: argparse.ArgumentParser, *, default: object) -> None:
    """The inbox's own options, taken before or after ACTION (*default*: SUPPRESS after it, so neither resets)."""
    shared_help = "group-shared mode: create folders 2770 and files 0660 (agents as different users in one group)"
    p.add_argument("--shared", action="store_true", default=default, help=shared_help)
    p.add_argument(
        "--require-signed",
        action="store_true",
        default=default,
        help="refuse requests not signed, and last changed, by a key allowed_signers trusts",
    )
    signing = p.add_mutually_exclusive_group()
    signing.add_argument(
        "--sign-with",
        metavar="KEYFILE",
        default=None if default is False else default,
        help="sign what this command writes with this OpenSSH Ed25519 key (default: the configured key, if any)",
    )
    no_sign = "do not sign, even with a key configured"
    signing.add_argument("--no-sign", action="store_true", default=default, help=no_sign)


def _add_inbox_commands(add: Add) -> None:
    """``handoff inbox DIR ACTION``: the request lifecycle between agents, one action per inbox call."""
    p = add(
        "inbox",
        handler("commands_transfer", "inbox_list"),
        "ask another agent to take work over, and answer such requests (an inbox folder or s3:// URL)",
    )
    help_dir = "the inbox the agents share: a folder (created on the first request) or s3://bucket/prefix"
    p.add_argument("dir", metavar="INBOX", help=help_dir)
    _inbox_options(p, default=False)
    actions = p.add_subparsers(dest="action", required=True, metavar="ACTION")

    def action(name: str, func: Callable[[argparse.Namespace], str], help_text: str) -> argparse.ArgumentParser:
        q = actions.add_parser(name, help=help_text, description=help_text)
        # SUPPRESS: given before or after ACTION, --json is kept (a subparser's default would reset it)
        q.add_argument("--json", action="store_true", default=argparse.SUPPRESS, help="print machine-readable JSON")
        _inbox_options(q, default=argparse.SUPPRESS)
        q.set_defaults(func=func, usage_error=q.error)
        return q

    q = action(
        "list",
        handler("commands_transfer", "inbox_list"),
        "list the pending requests, or with --all every request: most urgent (lowest priority) first, then oldest",
    )
    q.add_argument("--agent", type=agent, metavar="A", help="only the requests addressed to agent A")
    q.add_argument("--all", action="store_true", help="every status, not only PENDING")

    q = action(
        "request",
        handler("commands_transfer", "inbox_request"),
        "ask agent B to take work over; prints the new request",
    )
    q.add_argument("--from", dest="from_agent", type=agent, required=True, metavar="A", help="the asking agent")
    q.add_argument(
        "--to", type=agent, metavar="B", help="the agent asked (without it, --registry routes to a capable one)"
    )
    q.add_argument("--reason", required=True, metavar="R", help="why, for the agent deciding")
    q.add_argument(
        "--descriptor", metavar="FILE", help="the checkpoint to adopt: a descriptor (`handoff export`), - for stdin"
    )
    # no default here: the inbox's DEFAULT_PRIORITY applies, and building the parser never imports the inbox
    q.add_argument("--priority", type=int, metavar="N", help="lower is more urgent (default 5)")
    q.add_argument("--timeout", type=seconds, metavar="S", help="seconds B has to accept (default: no limit)")
    q.add_argument("--require", nargs="+", action="extend", default=[], metavar="CAP", help="capabilities B must have")
    q.add_argument("--registry", metavar="FILE", help="agent registry (JSON or YAML): the capability gate and routing")

    id_help = "the request's id, or a unique start of it (4 hex digits or more, as `list` shows it)"
    action(
        "accept",
        handler("commands_transfer", "inbox_accept"),
        "accept a PENDING request (of racing agents, exactly one succeeds)",
    ).add_argument("handoff_id", metavar="ID", help=id_help)
    q = action(
        "reject",
        handler("commands_transfer", "inbox_reject"),
        "reject a PENDING request, with a reason the requester will read",
    )
    q.add_argument("handoff_id", metavar="ID", help=id_help)
    q.add_argument("--reason", required=True, metavar="R", help="why not")
    action(
        "complete",
        handler("commands_transfer", "inbox_complete"),
        "mark an ACCEPTED request COMPLETED: the work was taken over",
    ).add_argument("handoff_id", metavar="ID", help=id_help)
    action("status", handler("commands_transfer", "inbox_status"), "show one request in full").add_argument(
        "handoff_id", metavar="ID", help=id_help
    )
