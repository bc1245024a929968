"""The doctor's findings: how each thing it checked stands, and whether this run may write its repair."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

from handoff_files.foundation.errors import HandoffError

__all__ = ["Finding", "Level", "Repairing", "failed", "not_written"]

#: ``unwritten``: a repair was due but the disk refused it (a read-only folder, EIO …): nothing is
#: lost, nothing was changed. ``unrepaired``: nothing verified is left to repair it from.
Level = Literal["ok", "warning", "error", "repaired", "unwritten", "unrepaired"]


@dataclass(frozen=True, slots=True)
class Finding:
    """One thing the doctor checked: how it stands, what it is, and what a person can do."""

    level: Level
    what: str
    advice: str = ""
    kind: str = ""  # for a program: fresh, lock, journal, history, primary, mirror, last-save, modes, temps


def failed(findings: list[Finding]) -> bool:
    """The doctor's verdict: whether an error, or something it could not repair or write, remains."""
    return any(finding.level in ("error", "unwritten", "unrepaired") for finding in findings)


def not_written(what: str, doing: str, exc: HandoffError) -> Finding:
    """A repair the disk refused: nothing was changed, nothing is lost, and why it could not write."""
    return Finding("unwritten", what, f"could not {doing}, nothing was changed: {exc}")


@dataclass(frozen=True, slots=True)
class Repairing:
    """How this run of the doctor goes: checking only, repairing, or asked to repair but unable to write at all.

    :param asked: ``--repair`` was asked for.
    :param blocked: why nothing can be written (the writers' lock cannot be opened in a read-only
        folder …), "" when writes may go ahead.
    """

    asked: bool
    blocked: str = ""

    @property
    def writes(self) -> bool:
        """Whether this run writes its repairs."""
        return self.asked and not self.blocked

    def unrepairable(self) -> Level:
        """The level of a problem nothing verified is left to repair from: an error, or unrepaired once asked."""
        return "unrepaired" if self.asked else "error"

    def pending(self, level: Level, what: str, advice: str) -> Finding:
        """A problem a repair fixes, when this run writes nothing: *level* and *advice* (how to repair it)
        when only checking; "unwritten" with the reason when the repair asked for could not write."""
        if self.blocked:
            return Finding("unwritten", what, f"not repaired, nothing was changed: {self.blocked}")
        return Finding(level, what, advice)
