"""Identity: which agent and thread a directory belongs to, so another thread's file is never taken as its own."""

from __future__ import annotations

from typing import Final

from handoff_files.format.loader import load
from handoff_files.format.model import Handoff
from handoff_files.foundation.errors import HandoffError
from handoff_files.thread.layout import MIRROR_NAME, ThreadDir
from handoff_files.thread.mirror import read_mirror

__all__ = ["Identity"]

_UNSET: Final = ("", "")


class Identity:
    """A thread's ids, worked out when first needed, and the check that a verified generation carries them.

    The ids are those ``state.json`` and the generation checked agree on; where they do not (or
    ``state.json`` is missing), those of the oldest verified generation in ``history/`` (the first
    this thread still keeps). A seal detects damage, not a copy: a sealed file of another thread,
    copied in, verifies, and only its ids tell it apart.

    :param layout: the thread directory.
    """

    def __init__(self, layout: ThreadDir) -> None:
        self._layout = layout
        self._mirror: tuple[str, str] | None = _UNSET
        self._first: tuple[str, str] | None = _UNSET

    def foreign(self, handoff: Handoff, label: str) -> str | None:
        """Why *handoff* (verified, read from *label*) is another thread's, or None if it is this thread's.

        :param handoff: a verified, sealed generation.
        :param label: where it was read, as a problem names it (``"history/00000005.json"``).
        :returns: the problem to report, or None.
        """
        ids = (handoff.agent_id, handoff.thread_id)
        if ids == self._mirror_ids():
            return None
        first = self._first_ids()
        if first is None or ids == first:
            return None  # nothing verified says otherwise: the oldest generation is the thread's first
        return (
            f"{label} holds generation {handoff.generation} of another thread (agent {ids[0]!r}, thread "
            f"{ids[1]!r}), not this thread's (agent {first[0]!r}, thread {first[1]!r}): never restored or "
            "chained on, and kept as it is for a person to look at"
        )

    def _mirror_ids(self) -> tuple[str, str] | None:
        if self._mirror == _UNSET:
            try:
                mirror = read_mirror(self._layout.path / MIRROR_NAME)
            except HandoffError:
                self._mirror = None
            else:
                self._mirror = (mirror.agent_id, mirror.thread_id)
        return self._mirror

    def _first_ids(self) -> tuple[str, str] | None:
        if self._first == _UNSET:
            self._first = None
            for _, name in reversed(self._layout.generations()):
                try:
                    handoff = load(self._layout.history_dir / name, follow_symlinks=False, origin="store")
                except HandoffError:
                    continue  # damaged: the next oldest
                if handoff.seal is not None:
                    self._first = (handoff.agent_id, handoff.thread_id)
                    break
        return self._first
