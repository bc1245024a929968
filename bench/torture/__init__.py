"""The torture suite: kills, injected faults, simulated power loss and racing writers, with one summary table.

Each part is a module with a ``run(options) -> Row`` function; ``python -m bench.torture`` runs
them and exits non-zero if any row lost, tore or left anything behind.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

__all__ = ["Options", "Row"]

Durability = Literal["full", "journal"]


@dataclass(frozen=True, slots=True)
class Options:
    """What every part is run with."""

    count: int  # the part's main count: kills, crash states, faults, saves per writer …
    seed: int
    workdir: Path  # a fresh directory the part may fill
    durability: Durability = "full"
    progress: Callable[[str], None] = print  # one line of progress (stderr in the CLI)


@dataclass(slots=True)
class Row:
    """One line of the summary table. ``lost``, ``torn`` and ``leftovers`` must be 0 for the run to pass."""

    part: str
    cases: int = 0  # crash states, fault points, rounds … whatever the part counts
    kills: int = 0  # processes killed (SIGKILL or strace-injected)
    faults: int = 0  # OS errors, short writes or dropped operations injected
    lost: int = 0  # acknowledged generations not restorable afterwards, or saves lost
    torn: int = 0  # files or restores that returned unverified or mixed data
    leftovers: int = 0  # temp files left after the next open
    failures: list[str] = field(default_factory=list)  # what went wrong, one line each (first few kept)
    notes: str = ""

    @property
    def ok(self) -> bool:
        """True when nothing was lost, torn or left behind and no check failed."""
        return not (self.lost or self.torn or self.leftovers or self.failures)

    def fail(self, what: str) -> None:
        """Record a failed check (kept up to 20, counted in ``failures``)."""
        if len(self.failures) < 20:
            self.failures.append(what)
