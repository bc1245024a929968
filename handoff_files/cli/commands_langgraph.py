"""The command for a LangGraph saver's root: ``handoff prune`` (it needs the ``[langgraph]`` extra)."""

from __future__ import annotations

import argparse
import dataclasses

from handoff_files.cli.machine import to_json
from handoff_files.foundation.errors import HandoffError, HandoffValidationError

__all__ = ["cmd_prune"]


def cmd_prune(args: argparse.Namespace) -> str:
    """``handoff prune THREAD --keep N [--dry-run]``: a thread's ``history/``, or a LangGraph saver root's threads."""
    from handoff_files.cli.commands import lock_options  # noqa: PLC0415 -- imported per command: start-up cost
    from handoff_files.thread.retention import is_thread  # noqa: PLC0415 -- imported per command: start-up cost

    if "://" in str(args.root):  # a bucket thread (a saver's root on a bucket prunes with its keep=)
        if args.thread is not None:
            raise HandoffValidationError(args.root, "--thread names a LangGraph thread in a folder's root")
        return _prune_thread(args)
    if args.thread is None and is_thread(args.root):
        return _prune_thread(args)
    try:
        from handoff_files.langgraph.saver import HandoffSaver  # noqa: PLC0415 -- only this command needs LangGraph
        from handoff_files.langgraph.trim import keep_newest  # noqa: PLC0415
    except ImportError as exc:
        raise HandoffError(args.root, str(exc)) from None
    saver = HandoffSaver(args.root)
    results = keep_newest(saver, args.keep, args.thread, dry_run=args.dry_run, **lock_options(args))
    if args.json:
        return to_json([dataclasses.asdict(result) for result in results])
    verb = "would remove" if args.dry_run else "removed"
    lines = [
        f"{result.thread_id} {result.checkpoint_ns or '(root)'}: kept {len(result.kept)}, {verb} {len(result.removed)}"
        for result in results
    ]
    total = sum(len(result.removed) for result in results)
    lines.append(f"{verb} {total} checkpoint(s) in {len(results)} namespace(s)")
    return "\n".join(lines) + "\n"


def _prune_thread(args: argparse.Namespace) -> str:
    """``handoff prune THREAD --keep N``: keep ``history/``'s newest generation files."""
    from handoff_files.cli.commands import lock_options  # noqa: PLC0415 -- imported per command: start-up cost
    from handoff_files.thread.retention import prune_history  # noqa: PLC0415

    if "://" in str(args.root):
        from handoff_files.thread.bucketprune import prune_bucket  # noqa: PLC0415 -- a bucket's only

        kept, removed = (
            [key.removeprefix("history/") for key in keys]
            for keys in prune_bucket(args.root, args.keep, dry_run=args.dry_run)
        )
    else:
        kept, removed = prune_history(args.root, args.keep, dry_run=args.dry_run, **lock_options(args))
    if args.json:
        return to_json({"thread": args.root, "kept": kept, "removed": removed, "dry_run": args.dry_run})
    verb = "would remove" if args.dry_run else "removed"
    lines = [f"{verb} history/{name}" for name in removed]
    keep = "would keep" if args.dry_run else "kept"
    lines.append(f"{keep} the newest {len(kept)} generation file(s); {verb} {len(removed)}")
    return "\n".join(lines) + "\n"
