"""Torture part ``kills``: SIGKILL a writer at random moments of its saves, round after round, checking after each.

Each round forks a writer from the fork server (:mod:`bench.torture.child`: no interpreter start
per round, so thousands of kills take minutes), lets it save 1 KB and 100 KB handoffs for a random
while, kills it, then opens the thread as a restarted agent would and checks it
(:func:`bench.torture.kill_checks.check_after_kill`). The next round's writer builds on what was
restored, so a mistake compounds instead of hiding.
"""

from __future__ import annotations

import random
import signal
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Final

from bench.torture import Options, Row
from bench.torture.child import Child, Zygote
from bench.torture.kill_checks import Before, Ledger, check_after_kill, check_chain, check_journal, leftovers, seal_text
from handoff_files import Restored

__all__ = ["KEEP", "SIZE_MIXES", "run"]

#: Padding per save, cycled by step: 1 KB saves are over in about a millisecond, 100 KB ones take
#: a few, and a mix makes the primary change size under the kill.
SIZE_MIXES: Final = ((1000,), (100_000,), (1000, 100_000), (100_000, 1000, 1000))
KEEP: Final = 10
#: When a round's kill comes: during the store's opening or the first save, at a random moment of
#: a saving loop, or just after the k-th acknowledgement (inside the next save, most often).
MODES: Final = ("early", "blind", "after-ack")
MODE_WEIGHTS: Final = (2, 4, 4)
#: How often the whole journal is read back (it is read from the end on every restore).
JOURNAL_EVERY: Final = 500
PROGRESS_SECONDS: Final = 5.0


@dataclass(slots=True)
class _Stats:
    """Evidence the kills landed where the part claims (in the row's notes)."""

    acks: int = 0
    rounds_without_ack: int = 0
    past_last_ack: int = 0
    from_history: int = 0
    leaving_temps: int = 0


@dataclass(slots=True)
class _Job:
    """One run's settings and running totals."""

    options: Options
    row: Row
    rng: random.Random
    directory: Path
    ledger: Ledger = field(default_factory=Ledger)
    stats: _Stats = field(default_factory=_Stats)


def _let_run(zygote: Zygote, child: Child, mode: str, rng: random.Random) -> None:
    if mode == "early":
        zygote.pump_for(rng.uniform(0, 0.004))
    elif mode == "blind":
        zygote.pump_for(rng.uniform(0, 0.04))
    else:
        wanted = rng.randint(1, 3)
        deadline = time.monotonic() + 60
        while len(child.acks) < wanted and child.code is None and time.monotonic() < deadline:
            zygote.pump(0.5)
        zygote.pump_for(rng.uniform(0, 0.004))


def _round(zygote: Zygote, number: int, previous: Restored | None, job: _Job) -> Restored | None:
    """One writer forked, let run, killed, and the thread checked; returns what the check restored."""
    options, row, stats, rng = job.options, job.row, job.stats, job.rng
    sizes = rng.choice(SIZE_MIXES)
    mode = rng.choices(MODES, MODE_WEIGHTS)[0]
    tag = f"r{number}"
    where = f"seed {options.seed}, round {number} ({mode}, sizes {sizes})"
    child = zygote.start(
        "writer",
        tag,
        dir=str(job.directory),
        writer=tag,
        start=1,
        count=0,
        sizes=list(sizes),
        keep=KEEP,
        durability=options.durability,
        yield_every=0,
    )
    _let_run(zygote, child, mode, rng)
    code = zygote.kill(child)
    del zygote.children[tag]
    row.cases += 1
    if child.errors:
        row.fail(f"writer said {child.errors[0]}: {where}")
    if code == -signal.SIGKILL:
        row.kills += 1
    else:
        row.fail(f"the writer ended by itself (exit code {code}; stderr in {zygote.log}): {where}")
    stats.acks += len(child.acks)
    stats.rounds_without_ack += not child.acks
    stats.leaving_temps += bool(leftovers(job.directory))
    generation = previous.generation if previous is not None else 0
    seal = seal_text(previous.handoff) if previous is not None else None
    last = child.acks[-1].generation if child.acks else generation
    restored = check_after_kill(
        job.directory,
        Before(generation, seal, tag, sizes, 1, child.acks),
        row,
        job.ledger,
        keep=KEEP,
        durability=options.durability,
        where=where,
    )
    if restored is not None:
        stats.past_last_ack += restored.generation > last
        stats.from_history += restored.source == "history"
    if number % JOURNAL_EVERY == 0:
        check_journal(job.directory, row, job.ledger, where)
    return restored


def run(options: Options) -> Row:
    """Kill ``options.count`` writers mid-save; ``cases`` counts rounds, ``kills`` the writers SIGKILL ended."""
    row = Row("kills")
    job = _Job(options, row, random.Random(options.seed), options.workdir / "thread")
    started = reported = time.monotonic()
    restored: Restored | None = None
    try:
        with Zygote(options.workdir / "children.log") as zygote:
            for number in range(1, options.count + 1):
                restored = _round(zygote, number, restored, job)
                if time.monotonic() - reported > PROGRESS_SECONDS:
                    reported = time.monotonic()
                    rate = number / (reported - started)
                    failed = len(row.failures)
                    options.progress(f"{number:,}/{options.count:,} kills, {rate:.0f}/s, {failed} failures")
    except (TimeoutError, RuntimeError) as exc:  # the fork server died or a child hung
        row.fail(f"the part stopped early: {exc}")
    where = f"seed {options.seed}, after round {row.cases}"
    if job.directory.is_dir():
        check_journal(job.directory, row, job.ledger, where)
        check_chain(job.directory, row, contiguous=True, where=where)
    elapsed = time.monotonic() - started
    stats = job.stats
    row.notes = (
        f"{row.kills / elapsed:.1f} kills/s ({elapsed:.0f} s); {stats.acks:,} saves acknowledged; "
        f"{stats.rounds_without_ack:,} rounds killed before any ACK; "
        f"{stats.past_last_ack:,} restored a save past the last ACK ({stats.from_history:,} from history/); "
        f"{stats.leaving_temps:,} kills left temp files (the next open removed them)"
    )
    options.progress(row.notes)
    return row
