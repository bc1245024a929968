"""A process that runs one transfer and SIGKILLs itself right after a chosen phase (for the phase-kill tests)."""

from __future__ import annotations

import os
import signal
import sys

from handoff_files.transfers.blobs import LocalBlobStore
from handoff_files.transfers.handover import Phase, transfer


def main() -> None:
    """``python transfer_child.py SOURCE TARGET BLOBS KILL_AFTER`` (KILL_AFTER: a phase name, or "none")."""
    source, target, blobs, kill_after = sys.argv[1:5]

    def on_phase(phase: Phase) -> None:
        print(phase, flush=True)
        if phase == kill_after:
            os.kill(os.getpid(), signal.SIGKILL)  # a real crash, at exactly this point

    transfer(source, target, blobs=LocalBlobStore(blobs), on_phase=on_phase)
    print("finished", flush=True)


if __name__ == "__main__":
    main()
