"""A writer process for the kill and concurrency tests (saves in a loop, ACKs each save) and the parent's side of it."""

from __future__ import annotations

import argparse
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Final

from handoff_files import Handoff, HandoffStore, load

#: Where the tests find this script (run it with ``python SCRIPT DIR [options]``).
SCRIPT: Final = Path(__file__).resolve()
#: Printed once the store is open, when ``--wait-for-go`` asks the parent for a start signal.
READY: Final = "READY"
_ACK = re.compile(r"^ACK (\d+) (\S+)\n$")
_GENERATION_FILE = re.compile(r"^(\d{8,})\.json$")


@dataclass(frozen=True, slots=True)
class Ack:
    """One acknowledged save: the i-th ACK of a writer (0-based) is the save of its step ``start + i``."""

    generation: int
    checksum: str


def content(writer: str, step: int, size: int) -> dict[str, Any]:
    """The five layers a writer saves: its name and counter in ``state.data``, padded to about *size* bytes."""
    return {
        "state": {
            "active_tasks": [f"{writer} step {step}"],
            "data": {"writer": writer, "step": step, "pad": "x" * size},
        },
        "narrative": f"Writer {writer} saved step {step}.",
        "decisions": [],
        "priorities": [{"task": f"save step {step + 1}", "urgency": "first"}],
        "warnings": [],
    }


def parse_acks(lines: list[str]) -> list[Ack]:
    """The ACKs in a writer's stdout lines; a line cut short by a kill (no newline) was not an ACK."""
    acks = []
    for line in lines:
        match = _ACK.match(line)
        if match:
            acks.append(Ack(int(match.group(1)), match.group(2)))
    return acks


class WriterProcess:
    """The parent's handle on a running writer: a thread drains its stdout, so a full pipe never stalls it."""

    def __init__(
        self, python: str, directory: Path, options: Sequence[str], env: Mapping[str, str], log: IO[str]
    ) -> None:
        self.proc = subprocess.Popen(
            [python, str(SCRIPT), str(directory), *options],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=log,
            env=dict(env),
            text=True,
        )
        self.lines: list[str] = []
        self._first_line = threading.Event()
        self._reader = threading.Thread(target=self._drain, daemon=True)
        self._reader.start()

    def _drain(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.append(line)
            self._first_line.set()
        self._first_line.set()  # EOF: whoever waits for a first line must not wait forever

    def wait_first_line(self, timeout: float) -> bool:
        """Wait until the writer printed a line (READY or its first ACK) or exited."""
        return self._first_line.wait(timeout)

    def go(self) -> None:
        """Release a writer started with ``--wait-for-go``."""
        assert self.proc.stdin is not None
        self.proc.stdin.write("go\n")
        self.proc.stdin.flush()

    def kill(self) -> int:
        """SIGKILL the writer (if it still runs) and collect everything it printed; returns its exit status."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
        return self.finish(timeout=None)

    def finish(self, timeout: float | None) -> int:
        """Wait for the writer to exit and for its stdout to drain; returns its exit status."""
        status = self.proc.wait(timeout)
        self._reader.join()
        for stream in (self.proc.stdin, self.proc.stdout):
            if stream is not None:
                stream.close()
        return status

    @property
    def acks(self) -> list[Ack]:
        """The ACKs printed so far (complete after :meth:`kill` or :meth:`finish`)."""
        return parse_acks(list(self.lines))


def seal_text(handoff: Handoff) -> str | None:
    """A handoff's seal as its successor's ``parent`` names it (``algorithm:digest``)."""
    return None if handoff.seal is None else f"{handoff.seal.algorithm}:{handoff.seal.digest}"


def read_thread(directory: Path) -> dict[int, Handoff]:
    """Load every generation a JSON thread holds (``history/`` and the primary), each with ``load()``.

    :raises AssertionError: if a history file is not a generation file or holds another generation
        than its name says, or if history and the primary hold one generation with two seals.
    """
    found: dict[int, Handoff] = {}
    history = directory / "history"
    names = sorted(path.name for path in history.iterdir()) if history.is_dir() else []
    for name in names:
        match = _GENERATION_FILE.match(name)
        assert match, f"unexpected file in history/: {name}"
        handoff = load(history / name)
        assert handoff.generation == int(match.group(1)), f"history/{name} holds generation {handoff.generation}"
        found[handoff.generation] = handoff
    primary = load(directory / "handoff.json")
    if primary.generation in found:
        # history keeps its own copy of each generation, the primary's included: the two must agree
        assert seal_text(found[primary.generation]) == seal_text(primary), "primary and history disagree"
    found[primary.generation] = primary
    return found


def check_chain(generations: dict[int, Handoff], *, contiguous: bool = False) -> None:
    """Assert the generations form an unbroken hash chain: each ``parent`` is its predecessor's seal where both exist.

    :param contiguous: also require every number from the lowest to the highest (a thread that pruned nothing).
    :raises AssertionError: on a missing seal, a broken ``parent`` link, or (if asked) a gap in the numbers.
    """
    numbers = sorted(generations)
    if contiguous:
        assert numbers == list(range(numbers[0], numbers[-1] + 1)), f"gap in the generations: {numbers}"
    for number in numbers:
        handoff = generations[number]
        assert handoff.seal is not None, f"generation {number} is unsealed"
        if number == 1:
            assert handoff.parent is None, "generation 1 names a parent"
        elif number - 1 in generations:
            expected = seal_text(generations[number - 1])
            assert handoff.parent == expected, f"generation {number}'s parent is {handoff.parent}, not {expected}"


def main(argv: list[str] | None = None) -> int:
    """Save ``--count`` generations (0: until killed), printing ``ACK <generation> <checksum>`` after each."""
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("directory", type=Path, help="the thread directory")
    parser.add_argument("--writer", default="w", help="this writer's name, saved in state.data")
    parser.add_argument("--start", type=int, default=1, help="the first step number")
    parser.add_argument("--count", type=int, default=0, help="saves to make; 0 saves until killed")
    parser.add_argument(
        "--sizes", default="0", help="comma-separated padding sizes in bytes, cycled one per save (e.g. 0,100000)"
    )
    parser.add_argument("--keep", type=int, default=None, help="the store's keep (default: the store's default)")
    parser.add_argument(
        "--yield-every", type=int, default=0, help="after every N-th save, sleep --yield-seconds (0: never)"
    )
    parser.add_argument("--yield-seconds", type=float, default=0.06, help="how long a yield sleeps")
    parser.add_argument("--wait-for-go", action="store_true", help=f"print {READY}, then wait for a line on stdin")
    parser.add_argument("--durability", choices=["full", "journal"], default="full", help="the store's durability")
    args = parser.parse_args(argv)
    sizes = [int(size) for size in args.sizes.split(",")]
    options: dict[str, Any] = {"durability": args.durability}
    if args.keep is not None:
        options["keep"] = args.keep
    store = HandoffStore(args.directory, **options)
    if args.wait_for_go:
        # a start barrier: every writer has paid its imports before any saves, so the saves overlap
        sys.stdout.write(f"{READY}\n")
        sys.stdout.flush()
        sys.stdin.readline()
    step = args.start
    while args.count == 0 or step < args.start + args.count:
        receipt = store.save(content(args.writer, step, sizes[(step - args.start) % len(sizes)]))
        # one write of one short line: a pipe delivers it whole or (killed before the write) not at all
        sys.stdout.write(f"ACK {receipt.generation} {receipt.checksum}\n")
        sys.stdout.flush()
        if args.yield_every and (step - args.start + 1) % args.yield_every == 0:
            # a waiting writer polls (up to every 20 ms), so a writer saving in a tight loop keeps re-taking the lock
            # before a waiting one looks again; sleeping past one poll lets the others in
            time.sleep(args.yield_seconds)
        step += 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
