"""The commands for model agents: ``handoff brief``, ``handoff acknowledge`` (and the hooks' and MCP server's)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from handoff_files.cli.machine import to_json
from handoff_files.foundation.errors import HandoffError, NoHandoffError

__all__ = ["cmd_acknowledge", "cmd_brief", "cmd_hook", "cmd_install", "cmd_mcp"]


def cmd_brief(args: argparse.Namespace) -> str:
    """``handoff brief THREAD [--budget N]``: the restored handoff written for a model, with its code."""
    from handoff_files.thread.locate import thread_of  # noqa: PLC0415 -- imported per command: start-up cost
    from handoff_files.uptake.briefing import briefing_for  # noqa: PLC0415 -- imported per command: start-up cost

    # thread_of first: a mistyped path is "no such …" as for every command, never "nothing saved here yet"
    briefing = briefing_for(thread_of(args.dir).where, budget=args.budget)
    if briefing is None:
        msg = "nothing saved here yet: no briefing to give (the agent starts fresh)"
        raise NoHandoffError(args.dir, msg)
    for problem in briefing.problems:  # the restore's, or a damaged acknowledgement key
        print(f"handoff: note: {problem}", file=sys.stderr)
    return to_json(briefing.to_json()) if args.json else briefing.text


def cmd_acknowledge(args: argparse.Namespace) -> str:
    """``handoff acknowledge THREAD CODE``: the agent read the current generation's briefing.

    ``--sign-with KEYFILE`` / ``--no-sign`` choose the key that signs the "resumed" line (default: the configured one).
    """
    from handoff_files.cli.commands import lock_options  # noqa: PLC0415
    from handoff_files.thread.store import HandoffStore  # noqa: PLC0415

    ack = HandoffStore(args.dir, **lock_options(args)).acknowledge(code=args.code)
    if args.json:
        return to_json({"generation": ack.generation, "source": ack.source, "with_code": ack.with_code})
    return f"acknowledged generation {ack.generation} with its briefing's code\n"


def cmd_mcp(args: argparse.Namespace) -> str:
    """``handoff mcp --thread DIR | --root DIR``: serve the tools over stdio until stdin closes."""
    from handoff_files.mcp_server.targets import Targets  # noqa: PLC0415

    targets = Targets.of(thread=args.thread, root=args.root)
    try:
        from handoff_files.mcp_server.server import serve  # noqa: PLC0415 -- only this command needs the SDK
    except ImportError as exc:
        raise HandoffError(args.thread or args.root, str(exc)) from None
    # a stray print while serving must reach stderr (the SDK points fd 1 there), not sit in a buffer
    # that is flushed onto the protocol stream at exit
    sys.stdout.reconfigure(line_buffering=True)  # type: ignore[union-attr]
    serve(targets, blobs=args.blobs)
    return ""


def cmd_hook(args: argparse.Namespace) -> str:
    """``handoff hook AGENT [--thread DIR]``: answer one hook event read from stdin, in the agent's format."""
    from handoff_files.hooks.run import run_hook  # noqa: PLC0415

    reply = run_hook(args.agent, sys.stdin.buffer.read(), thread=_thread_folder(args.thread))
    if reply.stderr:
        print(reply.stderr, file=sys.stderr)
    args.failed = reply.exit_code != 0
    return reply.stdout


def cmd_install(args: argparse.Namespace) -> str:
    """``handoff install AGENT [--project DIR] [--thread DIR] [--dry-run]``: merge the hooks and the MCP server in."""
    from handoff_files.hooks.install import install  # noqa: PLC0415

    thread = _thread_folder(args.thread)
    project = None if args.project is None else Path(args.project)
    report = install(
        args.agent, project, dry_run=args.dry_run, thread=thread, executable=args.executable, gitignore=args.gitignore
    )
    if args.json:
        return to_json(report.to_json())
    diffs = [change.diff() for change in report.files] if args.dry_run else []
    return "\n".join(report.lines()) + "\n" + "".join(diffs)


def _thread_folder(thread: str | None) -> Path | None:
    """``--thread`` as a folder: a URL (or a mistyped one) is refused as given, never made a path first."""
    from handoff_files.foundation.names import check_folder_path  # noqa: PLC0415

    if thread is None:
        return None
    check_folder_path(thread, "the hooks' --thread (a bucket thread is not briefed by hooks yet)")
    return Path(thread)
