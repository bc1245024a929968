"""A writer or a reader of the ``machines`` torture parts: a process that shares nothing with the others but the store.

``python -m bench.torture.machines_child writer TARGET WRITER STEP DURABILITY``: saves step after step into
the thread at TARGET (a folder or ``s3://…``), printing ``ACK WRITER STEP GENERATION SEAL`` once a
save returned (flushed: the parent holds it acknowledged then), ``ERR KIND`` for a save that raised
(a store that does not answer, lost races), and carries on until it is killed.

``python -m bench.torture.machines_child reader TARGET READER``: restores again and again, checking
that each restore is a verified generation of the thread, never older than the one before it; prints
``BAD why`` at once for a wrong answer, and ``DONE reads unavailable`` when sent SIGTERM.
"""

from __future__ import annotations

import signal
import sys
import time
from types import FrameType
from typing import Final

from handoff_files import HandoffStore
from handoff_files.foundation.errors import HandoffError, NoHandoffError, StorageUnavailableError
from handoff_files.thread.settings import Durability

THREAD: Final = "torture"
AGENT: Final = "torture-agent"  # one agent, its saves on several "machines" at once
#: padding per save, cycled by step: mostly small, a large one now and then
SIZES: Final = (1_000, 1_000, 1_000, 100_000)
#: history kept whole, so every acknowledged generation can be checked at the end
KEEP: Final = 1_000_000


def content(writer: int, step: int) -> dict[str, object]:
    """What writer *writer* saves at *step* (its state names both, its context pads it)."""
    size = SIZES[step % len(SIZES)]
    return {
        "narrative": f"writer {writer} step {step}",
        "state": {"data": {"writer": writer, "step": step, "pad": "x" * size}},
    }


def writer(target: str, number: int, step: int, durability: Durability) -> None:
    """Save forever from *step* on; each acknowledged save one line."""
    store = HandoffStore(target, thread_id=THREAD, agent_id=AGENT, keep=KEEP, durability=durability)
    while True:
        try:
            receipt = store.save(content(number, step))
        except HandoffError as exc:  # a store that does not answer (killed), every race lost: not acknowledged
            print(f"ERR {type(exc).__name__}", flush=True)
            time.sleep(0.05)
            continue
        print(f"ACK {number} {step} {receipt.generation} {receipt.checksum}", flush=True)
        step += 1


def reader(target: str) -> None:
    """Restore until SIGTERM; every answer a verified generation of the thread, never going back."""
    counts = {"reads": 0, "unavailable": 0}

    def done(_signum: int, _frame: FrameType | None) -> None:
        print(f"DONE {counts['reads']} {counts['unavailable']}", flush=True)
        sys.exit(0)

    signal.signal(signal.SIGTERM, done)
    store = HandoffStore(target, signing_key=False)
    newest = 0
    while True:
        try:
            restored = store.restore()
        except NoHandoffError as exc:
            if newest:  # something was restored before: nothing now is a lie
                print(f"BAD nothing restored after generation {newest}: {exc.reason}", flush=True)
            continue
        except StorageUnavailableError:
            counts["unavailable"] += 1
            time.sleep(0.05)
            continue
        except HandoffError as exc:
            print(f"BAD {type(exc).__name__}: {exc}", flush=True)
            continue
        handoff = restored.handoff
        data = handoff.state.data
        if restored.generation < newest:
            print(f"BAD generation {restored.generation} after {newest}: went back", flush=True)
        elif handoff.thread_id != THREAD or handoff.narrative != f"writer {data['writer']} step {data['step']}":
            print(f"BAD generation {restored.generation} is not a writer's save", flush=True)
        newest = max(newest, restored.generation)
        counts["reads"] += 1


def main(argv: list[str]) -> None:
    """Run as the role *argv* names."""
    role, target = argv[0], argv[1]
    if role == "writer":
        writer(target, int(argv[2]), int(argv[3]), "full" if argv[4] == "full" else "journal")
    else:
        reader(target)


if __name__ == "__main__":
    main(sys.argv[1:])
