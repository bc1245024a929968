"""Request statuses: where a handoff request stands in the inbox's lifecycle."""

from __future__ import annotations

from enum import Enum
from typing import Final

__all__ = ["OPEN", "SETTLED", "HandoffStatus"]


class HandoffStatus(Enum):
    """Where a handoff request stands; SW4RM's names and values (``EXPIRED``: timed out before acceptance)."""

    PENDING = "PENDING"
    ACCEPTED = "ACCEPTED"
    REJECTED = "REJECTED"
    COMPLETED = "COMPLETED"
    EXPIRED = "EXPIRED"


#: Statuses in which the target took the request on.
SETTLED: Final = (HandoffStatus.ACCEPTED, HandoffStatus.COMPLETED)
#: Statuses a request can still move on from.
OPEN: Final = (HandoffStatus.PENDING, HandoffStatus.ACCEPTED)
