"""The verify command: ``handoff verify THREAD``, the whole chain and every signature (as ``git fsck`` checks).

Only argparse and the standard library are imported here: :func:`register` runs whenever the
parser is built (``handoff --help`` too), and the handler imports the library module it uses.
"""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from handoff_files.thread.verify import CheckedGeneration, ThreadCheck

__all__ = ["cmd_verify", "register"]

Add = Callable[[str, Callable[[argparse.Namespace], str], str], argparse.ArgumentParser]


def register(add: Add) -> None:
    """Add ``verify`` through *add* (``main.build_parser``'s ``add(name, handler, help)``)."""
    p = add(
        "verify",
        cmd_verify,
        "check a thread whole: every generation's seal and signature and who signed it, the chain from each "
        "generation to the one before, generations missing between kept ones; exit 1 if anything is wrong",
    )
    p.add_argument("path", metavar="THREAD", type=_folder, help="the thread directory, or its s3:// URL")
    p.add_argument(
        "--require-signed",
        action="store_true",
        help="every generation after the first one a trusted key signed must be signed by a trusted key too",
    )


def cmd_verify(args: argparse.Namespace) -> str:
    """``handoff verify THREAD [--require-signed]``: one line per generation file, then what is wrong across them."""
    if isinstance(args.path, str):  # a bucket thread's URL
        from handoff_files.thread.bucketverify import verify_bucket  # noqa: PLC0415 -- a bucket's only

        checked = verify_bucket(args.path, require_signed=args.require_signed)
    else:
        from handoff_files.thread.verify import verify_thread  # noqa: PLC0415 -- imported per command: start-up cost

        checked = verify_thread(args.path, require_signed=args.require_signed)
    args.failed = not checked.ok
    if args.json:
        from handoff_files.cli.machine import to_json  # noqa: PLC0415 -- only --json needs it: start-up cost

        return to_json(_record(checked))
    return _text(checked)


def _record(checked: ThreadCheck) -> dict[str, Any]:
    return {
        "thread": checked.thread,
        "ok": checked.ok,
        "pinned": checked.pinned,
        "generations": [_located(checked, dataclasses.asdict(entry)) for entry in checked.generations],
        "problems": list(checked.problems),
        "retention": checked.retention,
    }


def _located(checked: ThreadCheck, entry: dict[str, Any]) -> dict[str, Any]:
    """A generation's record: on a bucket, ``path`` is the object's URL (the entry keeps its key)."""
    if isinstance(checked.thread, str):
        entry["path"] = f"{checked.thread}/{entry['path']}"
    return entry


def _text(checked: ThreadCheck) -> str:
    from handoff_files.cli.terminal import moment, short_digest  # noqa: PLC0415 -- imported per command

    pinned = f", pinned to signed generations since {checked.pinned}" if checked.pinned else ""
    lines = [f"{checked.thread}: {len(checked.generations)} generation file(s){pinned}"]
    for entry in checked.generations:
        number = "?" if entry.generation is None else str(entry.generation)
        inside = entry.path.parent != checked.thread  # history/
        where = f"{entry.path.parent.name}/{entry.path.name}" if inside else entry.path.name
        if entry.problem is not None:
            lines.append(f"{number:>4}  {where}  BAD: {entry.problem}")
            continue
        when = moment(entry.created_at) if entry.created_at is not None else "?"
        digest = short_digest(entry.checksum) if entry.checksum is not None else "no seal"
        lines.append(f"{number:>4}  {where}  {when}  {digest}  {_signer(entry)}")
    if checked.retention is not None:
        lines.append(f"      {checked.retention}")
    bad = [entry for entry in checked.generations if entry.problem is not None]
    for problem in checked.problems:
        lines.append(f"problem: {problem}")
    count = len(bad) + len(checked.problems)
    lines.append("ok: every generation verifies and the chain holds" if checked.ok else f"{count} problem(s)")
    return "\n".join(lines) + "\n"


def _signer(entry: CheckedGeneration) -> str:
    if entry.signature is None:
        return "unsigned"
    if entry.signature.principal is not None:
        return f"signed by {entry.signature.principal}"
    return f"NOT TRUSTED: {entry.signature.distrust}"


def _folder(text: str) -> Path | str:
    """THREAD: a folder, or an ``s3://`` URL kept as it is (a path would fold its ``//``)."""
    return text if "://" in text else Path(text)
