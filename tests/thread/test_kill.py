"""A writer SIGKILLed at random moments never loses an acknowledged generation, leaves no temp file, keeps its chain."""

from __future__ import annotations

import os
import random
import signal
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from handoff_files import Handoff, HandoffStore, load
from tests.writer_child import Ack, WriterProcess, check_chain, read_thread, seal_text

FAST_KILLS = 25
SLOW_KILLS = 200
#: Padding per save, cycled: small saves are over in well under a millisecond, ~100 KB ones take a few,
#: and a mix makes the primary change size under the kill.
SIZES = ("0", "100000", "0,100000")


@dataclass
class KillStats:
    """What a kill run did, to show it exercised what it claims to (printed; see with ``pytest -s``)."""

    kills: int = 0
    acks: int = 0
    rounds_without_ack: int = 0
    restored_past_last_ack: int = 0
    restored_from_history: int = 0
    kills_leaving_temps: int = 0
    histories_with_gaps: int = 0


def _temps(directory: Path) -> list[Path]:
    # a crashed save leaves ``.handoff.json.XXXXXXXX.tmp`` (or its history copy's twin); look for
    # any dot-file ending in .tmp, wider than the store's own pattern
    found = []
    for folder in (directory, directory / "history"):
        if folder.is_dir():
            found += [path for path in folder.iterdir() if path.name.startswith(".") and path.name.endswith(".tmp")]
    return found


def _run_and_kill(writer: WriterProcess, rng: random.Random, mode: str) -> int:
    """Let the writer run for a random while, then SIGKILL it; returns its exit status."""
    if mode == "after-ack":
        assert writer.wait_first_line(timeout=60), "the writer printed nothing in 60 s"
        time.sleep(rng.uniform(0, rng.choice((0.005, 0.05, 0.2))))
    elif mode == "blind":
        time.sleep(rng.uniform(0.1, 0.6))  # mostly mid-saves, sometimes still starting up
    else:
        time.sleep(rng.uniform(0, 0.1))  # during start-up or the store's opening, before any save
    return writer.kill()


@dataclass(frozen=True)
class _Round:
    """One killed writer: which round it was, what it acknowledged, and what the thread held before it."""

    number: int
    acks: list[Ack]
    durable: int  # the generation restored after the previous round: this round built on it
    durable_seal: str | None
    where: str  # how to replay it, for assertion messages


def _check_after_kill(directory: Path, killed: _Round, stats: KillStats) -> Handoff:
    """Reopen the thread as a restarted agent would, check nothing acknowledged was lost; return what it restored."""
    acks, durable, where = killed.acks, killed.durable, killed.where
    # the writer continued from the restored generation, one generation per save
    assert [ack.generation for ack in acks] == list(range(durable + 1, durable + 1 + len(acks))), where

    left = _temps(directory)
    stats.kills_leaving_temps += bool(left)
    store = HandoffStore(directory)  # a fresh store: opening it removes what the crash left
    assert _temps(directory) == [], f"temp files survived opening the store ({left}): {where}"

    restored = store.restore()
    if restored.source == "history":
        # history is the commit point: a kill after the history copy and before the primary's rename
        # leaves a committed generation the primary lags (by more than one if an earlier save was cut
        # the same way); nothing else may send restore() to history
        behind = load(directory / "handoff.json").generation
        assert behind < restored.generation, f"{restored.problems}: {where}"
        assert any("interrupted after its commit" in problem for problem in restored.problems), where
        stats.restored_from_history += 1
    else:
        # a kill between the primary's rename and state.json's leaves the mirror one save behind:
        # reported as an interrupted save, and nothing else may be wrong
        assert restored.source == "primary", where
        assert all("interrupted after its commit" in problem for problem in restored.problems), (
            f"{restored.problems}: {where}"
        )
    last_ack = acks[-1].generation if acks else durable
    # a save can finish without its ACK reaching stdout, so one past the last ACK is allowed
    assert restored.generation in {last_ack, last_ack + 1}, f"restored {restored.generation}: {where}"
    stats.restored_past_last_ack += restored.generation == last_ack + 1
    if restored.generation == durable:
        assert seal_text(restored.handoff) == killed.durable_seal, f"the durable generation changed: {where}"
    else:
        # this round's k-th save is its step k and generation durable + k
        data = restored.handoff.state.data
        assert (data["writer"], data["step"]) == (f"r{killed.number}", restored.generation - durable), where
    if acks and restored.generation == acks[-1].generation:
        assert seal_text(restored.handoff) == acks[-1].checksum, where

    thread = read_thread(directory)
    assert max(thread) == restored.generation, where
    assert restored.generation - 1 in thread or restored.generation == 1, f"no predecessor kept: {where}"
    check_chain(thread)
    stats.histories_with_gaps += sorted(thread) != list(range(min(thread), max(thread) + 1))
    return restored.handoff


def _kill_rounds(directory: Path, *, kills: int, seed: int, python: str, env: dict[str, str], log: Path) -> KillStats:
    rng = random.Random(seed)
    stats = KillStats()
    durable, durable_seal = 0, None
    with log.open("a") as log_file:
        for number in range(1, kills + 1):
            sizes = rng.choice(SIZES)
            # round 1 must save something, or there is nothing to restore; later rounds also die
            # during start-up and the store's opening, before any ACK
            mode = "after-ack" if number == 1 else rng.choices(("after-ack", "blind", "early"), (5, 3, 2))[0]
            writer = WriterProcess(python, directory, ["--writer", f"r{number}", "--sizes", sizes], env, log_file)
            status = _run_and_kill(writer, rng, mode)
            where = f"seed {seed}, round {number} ({mode}, sizes {sizes}); writer stderr in {log}"
            assert status == -signal.SIGKILL, f"the writer exited by itself with status {status}: {where}"
            stats.kills += 1
            stats.acks += len(writer.acks)
            stats.rounds_without_ack += not writer.acks
            restored = _check_after_kill(directory, _Round(number, writer.acks, durable, durable_seal, where), stats)
            durable, durable_seal = restored.generation, seal_text(restored)
    print(f"\n{stats} (seed {seed})")  # evidence the kills landed where intended, shown with -s
    return stats


@pytest.mark.slow  # make slow: the torture kills part (120 kills, both durabilities) stays in make test
def test_sigkill_at_random_moments_never_loses_an_acknowledged_generation(
    thread_dir: Path, tmp_path: Path, python: str, subprocess_env: dict[str, str]
) -> None:
    stats = _kill_rounds(
        thread_dir, kills=FAST_KILLS, seed=20240611, python=python, env=subprocess_env, log=tmp_path / "writers.log"
    )
    assert stats.kills == FAST_KILLS


@pytest.mark.slow
def test_hundreds_of_sigkills_never_lose_an_acknowledged_generation(
    thread_dir: Path, tmp_path: Path, python: str, subprocess_env: dict[str, str]
) -> None:
    # HANDOFF_KILLS and HANDOFF_SEED turn this into a longer torture run, or replay a failure
    kills = int(os.environ.get("HANDOFF_KILLS", str(SLOW_KILLS)))
    seed = int(os.environ.get("HANDOFF_SEED", "7"))
    stats = _kill_rounds(
        thread_dir, kills=kills, seed=seed, python=python, env=subprocess_env, log=tmp_path / "writers.log"
    )
    assert stats.kills == kills
