"""Forged acknowledgements, as a writer of a thread's folder (without the per-user key) can make them.

Also a script: ``python ackforgery.py HOW STEPS_AGENT_ARGS...`` runs the sample steps agent with its
acknowledgement replaced by a forged "resumed" line (*HOW*: ``no-proof`` or ``wrong-proof``), as the
kill runner's and the supervisor's tests start it.
"""

from __future__ import annotations

import runpy
import sys
from pathlib import Path
from typing import Any, Final

from handoff_files import HandoffStore, Restored
from handoff_files.thread.journal import Journal

#: Where the tests find this script.
SCRIPT: Final = Path(__file__).resolve()
STEPS_AGENT: Final = SCRIPT.parent.parent / "samples" / "steps_agent.py"
#: A proof of the right shape that no key made.
WRONG_PROOF: Final = "0" * 64


def forge(thread: Path, restored: Restored, **fields: Any) -> None:
    """Append a "resumed … code: right" line for *restored*'s generation, as a folder writer can.

    *fields* are added to (or, as None, dropped from) the line's own: ``proof=WRONG_PROOF`` …
    """
    line: dict[str, Any] = {
        "generation": restored.generation,
        "seal": str(restored.handoff.seal),
        "summary": f"resumed from generation {restored.generation} (primary), acknowledged with the briefing's code",
        "source": restored.source,
        "code": "right",
        "agent_id": restored.handoff.agent_id,
    }
    line.update(fields)
    Journal(thread).append("resumed", **{key: value for key, value in line.items() if value is not None})


def copy_line(source: Path, target: Path, *, event: str = "resumed") -> None:
    """Append *source*'s newest *event* line to *target*'s journal byte for byte."""
    lines = (source / "journal.jsonl").read_bytes().splitlines(keepends=True)
    newest = [line for line in lines if f'"event":"{event}"'.encode() in line][-1]
    with (target / "journal.jsonl").open("ab") as journal:
        journal.write(newest)


def _main(how: str, argv: list[str]) -> None:
    proof = {"no-proof": None, "wrong-proof": WRONG_PROOF}[how]

    def acknowledge(store: HandoffStore, restored: Restored | None = None, *, code: str | None = None) -> None:
        del code  # never checked: the forger writes the line itself
        restored = restored or store.restore()
        forge(store.path, restored, proof=proof)

    HandoffStore.acknowledge = acknowledge  # type: ignore[method-assign,assignment] # the forger's agent
    sys.argv = [str(STEPS_AGENT), *argv]
    runpy.run_path(str(STEPS_AGENT), run_name="__main__")


if __name__ == "__main__":
    _main(sys.argv[1], sys.argv[2:])
