"""The ``show`` command: a handoff for a person taking over, and a LangGraph saver's checkpoint where it is one.

Only what a thread needs is loaded: the transfer layer for a thread that was handed on, and the
checkpoint reader (plain JSON, no LangGraph) for a generation that holds a saver's checkpoint.
"""

from __future__ import annotations

import argparse
import dataclasses
from pathlib import Path
from typing import TYPE_CHECKING, Any

from handoff_files.cli.render import briefing
from handoff_files.foundation.errors import HandoffError

if TYPE_CHECKING:
    from handoff_files.langgraph.describe import CheckpointView
    from handoff_files.thread.results import Restored

__all__ = ["cmd_show"]


def cmd_show(args: argparse.Namespace) -> str:
    """``handoff show PATH [--generation N]``."""
    from handoff_files.thread.locate import open_handoff  # noqa: PLC0415 -- imported per command: start-up cost

    restored = open_handoff(
        args.path,
        assume_version=args.assume_version,
        generation=args.generation,
        require_signed=args.require_signed,
        accept_rollback=args.accept_rollback,
    )
    transferred = None
    on_disk = restored.url is None  # a thread on object storage has no transfer record nor a saver's folder
    if restored.source != "file" and on_disk:  # a thread directory, restored: it may have been handed on
        try:
            transferred = _transferred(Path(args.path))
        except HandoffError as exc:  # a damaged record must not hide the handoff: say so beside it
            restored = dataclasses.replace(restored, problems=(*restored.problems, str(exc)))
    restored, checkpoint = _checkpoint(restored, None if restored.source == "file" or not on_disk else Path(args.path))
    if args.json:
        from handoff_files.cli.machine import to_json  # noqa: PLC0415 -- only --json needs it: start-up cost

        return to_json(
            {
                "source": restored.source,
                "path": restored.where,
                "problems": list(restored.problems),
                "transferred_to": transferred,
                "langgraph": None if checkpoint is None else checkpoint.brief(),
                "signature": None if restored.signature is None else dataclasses.asdict(restored.signature),
                "handoff": restored.handoff.model_dump(mode="json"),
            }
        )
    return briefing(restored, transferred=transferred, checkpoint=checkpoint)


def _checkpoint(restored: Restored, thread: Path | None) -> tuple[Restored, CheckpointView | None]:
    """The LangGraph checkpoint the generation holds (None for any other handoff); a bad record is said beside it."""
    if "langgraph" not in restored.handoff.state.data:
        return restored, None
    from handoff_files.langgraph.describe import describe_checkpoint  # noqa: PLC0415 -- a saver's thread only

    try:
        return restored, describe_checkpoint(restored.handoff, restored.path, thread=thread)
    except HandoffError as exc:  # a record this release cannot read must not hide the handoff
        return dataclasses.replace(restored, problems=(*restored.problems, str(exc))), None


def _transferred(thread: Path) -> dict[str, Any] | None:
    """The record a finished transfer left in *thread* (where it went), or None; the transfer layer loads only then."""
    from handoff_files.thread.layout import TRANSFERRED_NAME  # noqa: PLC0415 -- imported per command: start-up cost

    if not (thread / TRANSFERRED_NAME).exists():
        return None
    from handoff_files.transfers.handover import transferred_to  # noqa: PLC0415 -- a transferred thread only

    return transferred_to(thread)
