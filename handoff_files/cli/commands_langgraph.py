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

    bucket = "://" in str(args.root)
    if bucket and _bucket_thread(args.root):
        if args.thread is not None:
            msg = "a handoff thread, not a LangGraph saver's root: --thread names a LangGraph thread under a root"
            raise HandoffValidationError(args.root, msg)
        return _prune_thread(args)
    if not bucket and args.thread is None and is_thread(args.root):
        return _prune_thread(args)
    try:
        if bucket:
            from handoff_files.langgraph.bucket_saver import BucketSaver  # noqa: PLC0415 -- needs LangGraph
            from handoff_files.langgraph.bucket_trim import keep_newest_in_bucket  # noqa: PLC0415
        else:
            from handoff_files.langgraph.saver import HandoffSaver  # noqa: PLC0415 -- only this command needs LangGraph
            from handoff_files.langgraph.trim import keep_newest  # noqa: PLC0415
    except ImportError as exc:
        raise HandoffError(args.root, str(exc)) from None
    if bucket:
        results = keep_newest_in_bucket(BucketSaver(args.root), args.keep, args.thread, dry_run=args.dry_run)
    else:
        results = keep_newest(
            HandoffSaver(args.root), args.keep, args.thread, dry_run=args.dry_run, **lock_options(args)
        )
    if args.json:
        return to_json([dataclasses.asdict(result) for result in results])
    verb, keep = ("would remove", "would keep") if args.dry_run else ("removed", "kept")
    lines = [
        f"{r.thread_id} {r.checkpoint_ns or '(root)'}: {keep} {len(r.kept)}, {verb} {len(r.removed)}" for r in results
    ]
    total = sum(len(result.removed) for result in results)
    changed = sum(1 for result in results if result.removed)
    lines.append(f"{verb} {total} checkpoint(s) from {changed} of {len(results)} namespace(s)")
    return "\n".join(lines) + "\n"


def _bucket_thread(url: str) -> bool:
    """Whether *url* is a handoff thread on a bucket (True) or a LangGraph saver's root (False).

    :raises HandoffValidationError: if it is neither (one thread of a saver's root, or nothing known).
    """
    from handoff_files.storage import open_storage  # noqa: PLC0415 -- obstore only for a bucket
    from handoff_files.thread.bucketkind import refuse_other, saver_part  # noqa: PLC0415

    keys = open_storage(url).list("")
    if any(key.startswith("history/") for key in keys):
        return True
    found = saver_part(keys, url)
    if found is not None and found[0] == "root":
        return False
    if found is not None and found[0] == "thread":
        from handoff_files.langgraph.bucket_keys import decode_name  # noqa: PLC0415 -- plain names, no LangGraph

        root, _, part = url.rstrip("/").rpartition("/")
        name = decode_name(part) or part
        msg = (
            "one thread of a LangGraph saver's root: prune the root, naming the thread: "
            f"handoff prune {root} --thread {name} --keep N"
        )
        raise HandoffValidationError(url, msg)
    refuse_other(url, keys)  # threads under it, or another part of a saver: named
    msg = "neither a thread nor a LangGraph root: it holds no handoff generation and no LangGraph checkpoint"
    raise HandoffValidationError(url, msg)


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
    if len(kept) > args.keep:  # newer objects that do not verify stay above the newest that do, as evidence
        extra = len(kept) - args.keep
        lines.append(
            f"{keep} {len(kept)} generation file(s): the newest {args.keep} that verify and {extra} newer "
            f"that do not, for `handoff doctor`; {verb} {len(removed)}"
        )
    else:
        lines.append(f"{keep} the newest {len(kept)} generation file(s); {verb} {len(removed)}")
    return "\n".join(lines) + "\n"
