"""Whether a started agent acknowledged the generation restored for it, and whether with its briefing's code."""

from __future__ import annotations

from collections.abc import Callable

from handoff_files.foundation.clock import utc_now
from handoff_files.foundation.errors import HandoffError
from handoff_files.run.restart import AckWatch
from handoff_files.thread.ackproof import Claim, claim
from handoff_files.thread.journal import Entry, Journal
from handoff_files.thread.results import Restored

__all__ = ["AckCheck"]


class AckCheck:
    """Looks for a new "resumed" line of the restored generation (or a newer one) after a start.

    A line without the briefing's code (the agent called ``acknowledge()`` without reading its
    briefing, or before codes existed) counts unless *require_code*; either way it is reported. A line
    that claims the code counts with it only if its proof checks (:mod:`~handoff_files.thread.ackproof`):
    one a writer of the folder made or copied is reported as such and counts as one without the code.
    Each problem is told once: the supervisor looks every poll, a person needs to hear it once.

    :param journal: the thread's journal, before the agent starts.
    :param restored: the generation restored for the agent.
    :param report: where a message goes.
    :param require_code: count only a line made with the briefing's code.
    """

    def __init__(
        self, journal: Journal, restored: Restored, report: Callable[[str], None], *, require_code: bool
    ) -> None:
        self.restored = restored
        self.report = report
        self.require_code = require_code
        self.with_code = False
        self.since = utc_now()  # a line written before the start is an older one, copied
        self.told: set[str] = set()
        self.watch = AckWatch(journal, on_error=self._unreadable)

    def _unreadable(self, exc: HandoffError) -> None:
        self._tell(f"cannot read the journal to see the acknowledgement: {exc.reason}")

    def _tell(self, message: str) -> None:
        if message not in self.told:
            self.told.add(message)
            self.report(message)

    def arrived(self) -> bool:
        """Whether a new, counted "resumed" line of the restored generation (or a newer one) is in the journal."""
        entry = self.watch.new_line()
        if entry is None:
            return False
        generation = entry.generation
        if isinstance(generation, int) and generation < self.restored.generation:
            self._tell(
                f"the agent acknowledged generation {generation}, older than generation "
                f"{self.restored.generation} that was restored for it: that is not its context"
            )
            return False
        proved = claim(entry, thread_id=self.restored.handoff.thread_id, since=self.since)
        if proved != "proven":
            why, counted = _without_code(proved, entry)
            if self.require_code:
                self._tell(f"{why}: not counted, the run requires the code")
                return False
            self.report(counted)
            return True
        self.with_code = True
        self.report(f"the agent acknowledged its context: resumed from generation {generation} with the code")
        return True


def _without_code(proved: Claim, entry: Entry) -> tuple[str, str]:
    """Why *entry* does not count as made with the code, and what is said when it counts without it."""
    generation = entry.generation
    if proved == "forged":
        why = (
            f"a resumed line of generation {generation} claims the code but its proof does not check "
            "(written by hand, or copied from another thread, generation or moment)"
        )
        return why, f"{why}: counted as acknowledged without the code"
    if proved == "replayed":
        why = (
            f"a resumed line of generation {generation} claims the code but was written before this start "
            f"(at {entry.at}): a copy of an older acknowledgement"
        )
        return why, f"{why}: counted as acknowledged without the code"
    return (
        f"the agent acknowledged generation {generation} without its briefing's code (did it read it?)",
        f"the agent acknowledged its context: resumed from generation {generation}, but without its "
        "briefing's code (did it read it?)",
    )
