"""The trust command: ``handoff trust THREAD`` (``--revoke``, ``--list``), the threads the hooks may brief from.

Only argparse and the standard library are imported here: :func:`register` runs whenever the
parser is built (``handoff --help`` too), and the handler imports the library module it uses.
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Callable
from pathlib import Path

__all__ = ["cmd_trust", "register"]

Add = Callable[[str, Callable[[argparse.Namespace], str], str], argparse.ArgumentParser]


def register(add: Add) -> None:
    """Add ``trust`` through *add* (``main.build_parser``'s ``add(name, handler, help)``)."""
    p = add(
        "trust",
        cmd_trust,
        "trust a thread folder, so the session-start hooks brief from it (a thread handoff-files made here "
        "is trusted already); --revoke forgets it, --list shows them all; --reset forgets its pin to signed "
        "generations",
    )
    p.add_argument(
        "path", metavar="THREAD", nargs="?", type=_thread, help="the thread directory (--reset: or s3:// URL)"
    )
    what = p.add_mutually_exclusive_group()
    what.add_argument("--revoke", action="store_true", help="no longer trust THREAD")
    what.add_argument("--list", action="store_true", help="list the trusted threads (no THREAD)")
    what.add_argument(
        "--reset",
        action="store_true",
        help=(
            "forget that THREAD was pinned to signed generations, and its rollback anchor "
            "(after a key change, a thread made anew, or a rollback of your own)"
        ),
    )


def cmd_trust(args: argparse.Namespace) -> str:
    """``handoff trust THREAD | --revoke THREAD | --list``: change or show the per-user trust record."""
    from handoff_files.cli.machine import to_json  # noqa: PLC0415 -- imported per command: start-up cost
    from handoff_files.thread import trust  # noqa: PLC0415 -- imported per command: start-up cost

    if args.list == (args.path is not None):
        args.usage_error("give a THREAD to trust (or --revoke or --reset it), or --list with none")
    if args.reset:
        from handoff_files.foundation.errors import HandoffNotFoundError  # noqa: PLC0415 -- per command
        from handoff_files.thread.pins import unpin  # noqa: PLC0415 -- imported per command: start-up cost

        if isinstance(args.path, Path) and not args.path.is_dir():
            msg = "not a thread directory: a pin is kept for a thread's folder (or an s3:// URL)"
            raise HandoffNotFoundError(args.path, msg)
        state = "is no longer pinned" if unpin(args.path) else "was not pinned"
        named = args.path if isinstance(args.path, str) else os.path.realpath(args.path)
        said = (
            f"{named} {state} to signed generations, and has no rollback anchor: its next "
            "restore takes the newest verified generation, and pins and anchors the thread if a trusted key signed it"
        )
    elif isinstance(args.path, str):
        args.usage_error("a hook briefs from a thread folder only: trust and --revoke take a folder, not a URL")
    elif args.list:
        from handoff_files.thread.pins import pinned_threads  # noqa: PLC0415 -- imported per command: start-up cost

        lines = [f"{entry.path}  ({entry.how}, {entry.trusted_at})" for entry in trust.trusted_threads()]
        said = "\n".join(lines) if lines else f"no thread is trusted yet ({trust.trust_path()})"
        pins = [f"  {pin.path}  (thread {pin.thread_id}: {pin.how}, {pin.pinned_at})" for pin in pinned_threads()]
        if pins:
            said += "\npinned to signed generations:\n" + "\n".join(pins)
    elif args.revoke:
        was = trust.revoke(args.path)
        said = f"{os.path.realpath(args.path)} is {'no longer' if was else 'not'} trusted: no hook briefs from it"
    else:
        entry = trust.trust(args.path)
        said = f"trusted {entry.path}: the session-start hooks brief from it (recorded in {trust.trust_path()})"
    if args.json:
        return to_json([entry.to_json() for entry in trust.trusted_threads()])
    return said + "\n"


def _thread(text: str) -> Path | str:
    """THREAD as given: a folder's path, or a URL (``s3://…``) kept as it is (a path would fold its ``//``)."""
    return text if "://" in text else Path(text)
