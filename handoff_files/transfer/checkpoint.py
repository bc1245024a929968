"""Checkpoint hand-off, one import away: export, verified adoption and whole-thread transfer (re-exported).

The work is done in :mod:`~handoff_files.transfer.export` (a sealed generation to a blob store and
its descriptor), :mod:`~handoff_files.transfer.adopt` (fetched, checked, written as a new thread)
and :mod:`~handoff_files.transfer.handover` (the three phases of :func:`transfer`).
"""

from __future__ import annotations

from handoff_files.transfer.adopt import AdoptResult, adopt_checkpoint, verify_checkpoint
from handoff_files.transfer.export import checkpoint_bytes, handoff_checkpoint
from handoff_files.transfer.handover import PHASES, Phase, TransferResult, transfer, transferred_to

__all__ = [
    "PHASES",
    "AdoptResult",
    "Phase",
    "TransferResult",
    "adopt_checkpoint",
    "checkpoint_bytes",
    "handoff_checkpoint",
    "transfer",
    "transferred_to",
    "verify_checkpoint",
]
