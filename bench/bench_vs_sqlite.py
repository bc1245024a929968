"""handoff-files beside LangGraph's ``SqliteSaver``: save, load, restart and watch latency, in one run.

``python -m bench.bench_vs_sqlite`` measures, at 1 KB, 100 KB and 1 MB of the same handoff content
(:mod:`bench.workload`), each contender interleaved with the others round by round:

- save: ``HandoffStore.save`` (each durability mode the store has) beside ``SqliteSaver.put`` and a
  minimal durable write of the primary's bytes;
- load: ``handoff_files.load(primary)`` and ``HandoffStore(dir).restore()`` beside
  ``SqliteSaver.get_tuple`` and a read + ``orjson.loads`` + sha256 of the primary;
- restart: the wall time of a fresh ``python -c`` that imports and restores, beside one that imports
  and loads the same file (the goal's baseline), ``python -c pass`` and one that opens the
  ``SqliteSaver`` and reads the newest checkpoint;

then the syncs each durable write makes (strace), and how long a save takes to reach a watcher
beside a reader polling ``get_tuple``. It prints the tables and writes them, with the machine and
the SQLite settings observed, to ``bench/results-vs-sqlite.md``. Without langgraph installed the
SqliteSaver columns read "n/a" and say why; everything else is still measured.
"""

from __future__ import annotations

import argparse
import functools
import os
import tempfile
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from importlib import metadata
from pathlib import Path
from typing import Any, Final

import orjson

import handoff_files
import handoff_files.thread.store
from bench.baselines import minimal_durable_write, orjson_and_sha256
from bench.fresh import ROOT, byte_compiled, python_run, strace_missing, syncs_per_op
from bench.latency import poll_latencies, watch_latencies
from bench.report import machine_facts, run_kind, text_table, write_report
from bench.sqlite_saver import FRESH_GET_TUPLE, THREAD_ID, Saver, missing
from bench.timing import Sample, interleaved
from bench.vs_sqlite_tables import Results, SizeResult, misses, sections, tables
from bench.workload import Size, build_content
from handoff_files import HandoffStore
from handoff_files.thread.store import DEFAULT_KEEP
from handoff_files.watchers.watcher import DEFAULT_DEBOUNCE

__all__ = [
    "SIZES",
    "Contenders",
    "Rounds",
    "content_for",
    "durabilities",
    "measure_fresh",
    "measure_loads",
    "measure_saves",
    "measure_syncs",
    "measure_watch",
    "open_store",
    "prepare",
]

_HERE: Final = Path(__file__).resolve().parent
DEFAULT_OUT: Final = _HERE / "results-vs-sqlite.md"
SIZES: Final = (Size("1 KB", 1024), Size("100 KB", 100 * 1024), Size("1 MB", 1024 * 1024))
AGENT_ID: Final = "bench-agent"
#: How often the SqliteSaver reader polls in the watch comparison (LangGraph has no change notification).
POLL_INTERVAL: Final = 0.05


@dataclass(frozen=True, slots=True)
class Rounds:
    """How much to measure.

    ``single``: interleaved rounds per size of one call each (``gc.collect()`` before it, so each
    call finds the caches as other work left them). ``batched``: (rounds, calls per batch) per size
    of back-to-back calls, timed per batch: the steady cost of saving in a loop, periodic work such
    as SQLite's WAL checkpoint included. Then fresh-process rounds, saves per watch case and
    operations per strace count.
    """

    single: Mapping[str, int]
    batched: Mapping[str, tuple[int, int]]
    fresh: int
    watch: int
    syncs: int


# at 1 MB a batch of 4 puts fills SQLite's 1000-page WAL once: every batch pays its share of a checkpoint
FULL: Final = Rounds(
    single={"1 KB": 400, "100 KB": 200, "1 MB": 60},
    batched={"1 KB": (60, 10), "100 KB": (50, 5), "1 MB": (25, 4)},
    fresh=25,
    watch=100,
    syncs=20,
)
QUICK: Final = Rounds(
    single={"1 KB": 10, "100 KB": 6, "1 MB": 3},
    batched={"1 KB": (3, 10), "100 KB": (3, 5), "1 MB": (2, 4)},
    fresh=2,
    watch=5,
    syncs=3,
)

FRESH_LOAD: Final = "import sys\nimport handoff_files\nhandoff_files.load(sys.argv[1])\n"
FRESH_RESTORE: Final = "import sys\nimport handoff_files\nhandoff_files.HandoffStore(sys.argv[1]).restore()\n"

# the syncs snippets: python -c SNIPPET WORKDIR CONTENT_FILE [MODE] OPS (see bench.fresh.syncs_per_op)
SYNCS_SAVE: Final = """\
import sys
from pathlib import Path
import orjson
from handoff_files import HandoffStore
workdir, content_file, mode, ops = sys.argv[1:]
content = orjson.loads(Path(content_file).read_bytes())
store = HandoffStore(workdir, **({} if mode == "full" else {"durability": mode}))
for _ in range(int(ops) + 3):
    store.save(content)
"""
SYNCS_PUT: Final = """\
import sys
from pathlib import Path
import orjson
from bench.sqlite_saver import Saver
workdir, content_file, ops = sys.argv[1:]
Path(workdir).mkdir()
saver = Saver(Path(workdir) / "langgraph.sqlite")
content = orjson.loads(Path(content_file).read_bytes())
for _ in range(int(ops) + 3):
    saver.put(content)
saver.close()
"""
SYNCS_WRITE: Final = """\
import sys
from pathlib import Path
from bench.baselines import minimal_durable_write
workdir, content_file, ops = sys.argv[1:]
Path(workdir).mkdir()
data = Path(content_file).read_bytes()
for _ in range(int(ops) + 3):
    minimal_durable_write(Path(workdir) / "handoff.json", data)
"""


def durabilities() -> tuple[str, ...]:
    """The store's durability modes in this checkout: ``("full",)`` until the ``durability=`` option exists."""
    return tuple(getattr(handoff_files.thread.store, "DURABILITIES", ("full",)))


def open_store(path: Path, durability: str = "full") -> HandoffStore:
    """A store on *path* saving with *durability* (passed only when not the default "full")."""
    # keyword built at run time: this bench also runs against a store that predates the option
    options: dict[str, Any] = {} if durability == "full" else {"durability": durability}
    return HandoffStore(path, agent_id=AGENT_ID, **options)


def content_for(size: Size) -> dict[str, Any]:
    """The handoff content for *size*: :func:`bench.workload.build_content`, trimmed for sizes it cannot reach.

    The workload's smallest handoff is about 2 KB (its layers alone); for 1 KB this keeps one
    task, decision, priority and warning and the narrative's first sentence: a minimal real handoff.
    """
    content = build_content(size.target)
    if size.target < 2048:
        for layer in ("decisions", "priorities", "warnings"):
            content[layer] = content[layer][:1]
        state = content["state"]
        state["completed_tasks"], state["blocked_tasks"] = [], []
        state["data"] = {"branch": state["data"]["branch"]}
        content["narrative"] = content["narrative"].split(". ")[0].rstrip(".") + "."
    return content


@dataclass(slots=True)
class Contenders:
    """Everything prepared at one size: the stores, the SqliteSaver (if it can be had), the baseline's file."""

    size: Size
    content: dict[str, Any]
    stores: dict[str, HandoffStore]
    raw: Path
    data: bytes
    saver: Saver | None
    database: Path | None
    notes: list[str] = field(default_factory=list)

    @property
    def primary(self) -> Path:
        """The primary of the store saving with durability "full"."""
        return self.stores["full"].primary

    def close(self) -> None:
        """Close the SqliteSaver's connection (before a fresh process opens the database, as after a restart)."""
        if self.saver is not None:
            self.saver.close()
            self.saver = None


def prepare(size: Size, root: Path, *, sqlite: bool = True) -> Contenders:
    """Fill a store per durability mode, a SqliteSaver thread and the baseline's file with *size*'s content.

    Each gets ``keep + 2`` saves first, so every timed save finds a full ``history/`` and prunes.

    :raises RuntimeError: if ``get_tuple`` does not give back the content last put.
    """
    slug = size.label.replace(" ", "")
    base = root / slug
    base.mkdir(parents=True, mode=0o700)
    content = content_for(size)
    stores = {}
    for mode in durabilities():
        store = open_store(base / mode / THREAD_ID, mode)
        for _ in range(DEFAULT_KEEP + 2):
            store.save(content)
        stores[mode] = store
    data = stores["full"].primary.read_bytes()
    raw = base / "raw" / "handoff.json"
    raw.parent.mkdir(mode=0o700)
    minimal_durable_write(raw, data)  # the baseline replaces an existing file, as a save does
    note = missing() if sqlite else "SqliteSaver not measured: switched off (--no-sqlite)"
    saver, database = None, None
    if note is None:
        database = base / "langgraph.sqlite"
        saver = Saver(database)
        for _ in range(DEFAULT_KEEP + 2):
            saver.put(content)
        if saver.content() != content:
            msg = f"SqliteSaver.get_tuple did not return the content put last ({size.label})"
            raise RuntimeError(msg)
    return Contenders(size, content, stores, raw, data, saver, database, [note] if note else [])


def measure_saves(c: Contenders, rounds: int, *, batch: int = 1, warmup: int = 2) -> dict[str, Sample]:
    """Durable saves, interleaved: ``save:<mode>`` per durability, ``put`` (if SqliteSaver is there), ``write``.

    :param batch: calls per timed batch, back to back (the sample is the time per call).
    """
    cases: dict[str, Callable[[], object]] = {
        f"save:{mode}": functools.partial(store.save, c.content) for mode, store in c.stores.items()
    }
    if c.saver is not None:
        cases["put"] = functools.partial(c.saver.put, c.content)
    cases["write"] = functools.partial(minimal_durable_write, c.raw, c.data)
    return interleaved(cases, repeats=rounds, warmup=warmup, batch=dict.fromkeys(cases, batch))


def _restore(path: Path) -> object:
    # a fresh store per restore: what a restarted agent does
    return HandoffStore(path).restore()


def measure_loads(c: Contenders, rounds: int, *, batch: int = 1, warmup: int = 2) -> dict[str, Sample]:
    """Verified loads, interleaved: ``load``, ``restore:<mode>``, ``get_tuple`` (if there), ``read``.

    :param batch: calls per timed batch, back to back (the sample is the time per call).
    """
    cases: dict[str, Callable[[], object]] = {"load": functools.partial(handoff_files.load, c.primary)}
    for mode, store in c.stores.items():
        cases[f"restore:{mode}"] = functools.partial(_restore, store.path)
    if c.saver is not None:
        cases["get_tuple"] = c.saver.get_tuple
    cases["read"] = functools.partial(orjson_and_sha256, c.primary)
    return interleaved(cases, repeats=rounds, warmup=warmup, batch=dict.fromkeys(cases, batch))


def measure_fresh(c: Contenders, rounds: int, *, warmup: int = 2) -> dict[str, Sample]:
    """Fresh processes, interleaved, wall time: ``pass``, ``load``, ``restore:<mode>``, ``get_tuple``.

    Closes the in-process SqliteSaver first, so each child opens the database alone, as a
    restarted agent would.
    """
    c.close()
    cases: dict[str, Callable[[], object]] = {
        "pass": python_run("pass"),
        "load": python_run(FRESH_LOAD, str(c.primary)),
    }
    for mode, store in c.stores.items():
        cases[f"restore:{mode}"] = python_run(FRESH_RESTORE, str(store.path))
    if c.database is not None:
        cases["get_tuple"] = python_run(FRESH_GET_TUPLE, str(c.database), THREAD_ID)
    return interleaved(cases, repeats=rounds, warmup=warmup)


def measure_syncs(root: Path, content: Mapping[str, Any], ops: int, *, sqlite: bool) -> dict[str, float]:
    """fsync-family calls per acknowledged write, counted with strace: ``save:<mode>``, ``put``, ``write``."""
    content_file = root / "syncs-content.json"
    content_file.write_bytes(orjson.dumps(content))
    counts = {f"save:{mode}": syncs_per_op(SYNCS_SAVE, str(content_file), mode, ops=ops) for mode in durabilities()}
    if sqlite:
        counts["put"] = syncs_per_op(SYNCS_PUT, str(content_file), ops=ops)
    counts["write"] = syncs_per_op(SYNCS_WRITE, str(content_file), ops=ops)
    return counts


def measure_watch(
    root: Path, content: Mapping[str, Any], count: int, *, sqlite: bool, poll: float = POLL_INTERVAL
) -> dict[str, Sample]:
    """Save → reader latency: ``watch:0`` and ``watch`` (default debounce), and ``poll`` (SqliteSaver, if there)."""
    samples = {}
    for name, debounce in (("watch:0", 0.0), ("watch", DEFAULT_DEBOUNCE)):
        thread = root / f"watch-{name.replace(':', '-')}" / THREAD_ID
        latencies = watch_latencies(thread, content, count, debounce=debounce, pause=poll)
        samples[name] = Sample(name, tuple(latencies))
    if sqlite:
        database = root / "watch.sqlite"
        writer, reader = Saver(database), Saver(database)  # the reader has its own connection, as another process

        def put() -> int:
            writer.put(content)
            return writer.step

        try:
            samples["poll"] = Sample("poll", tuple(poll_latencies(put, reader.newest_step, count, interval=poll)))
        finally:
            reader.close()
            writer.close()
    return samples


def _versions() -> str:
    found = []
    for name in ("langgraph-checkpoint-sqlite", "langgraph-checkpoint", "ormsgpack"):
        try:
            found.append(f"{name} {metadata.version(name)}")
        except metadata.PackageNotFoundError:
            found.append(f"{name} (not installed)")
    return ", ".join(found)


def run(root: Path, rounds: Rounds, *, sqlite: bool = True, poll: float = POLL_INTERVAL) -> Results:
    """Measure everything at every size and return the results (nothing is printed but progress)."""
    results = Results(poll=poll, durabilities=durabilities())
    results.notes.append(f"fresh processes: the package {byte_compiled(ROOT)}")
    for size in SIZES:
        print(f"{size.label}: preparing...", flush=True)
        c = prepare(size, root, sqlite=sqlite)
        if c.saver is not None and not results.sqlite_settings:
            results.sqlite_settings = c.saver.settings()
        results.notes.extend(note for note in c.notes if note not in results.notes)
        sqlite_bytes = c.saver.stored_bytes() if c.saver is not None else None
        label = size.label
        batched, batch = rounds.batched[label]
        print(f"{label}: saves and loads, {batched} rounds of {batch} back to back...", flush=True)
        saves = measure_saves(c, batched, batch=batch)
        loads = measure_loads(c, batched, batch=batch)
        print(f"{label}: saves and loads, {rounds.single[label]} rounds of single calls...", flush=True)
        saves_single = measure_saves(c, rounds.single[label])
        loads_single = measure_loads(c, rounds.single[label])
        print(f"{label}: fresh processes, {rounds.fresh} rounds...", flush=True)
        fresh = measure_fresh(c, rounds.fresh)
        results.sizes.append(
            SizeResult(size, len(c.data), sqlite_bytes, batch, saves, loads, saves_single, loads_single, fresh)
        )
    has_sqlite = sqlite and missing() is None
    small = content_for(SIZES[0])
    reason = strace_missing()
    if reason is None:
        print("syncs per write (strace)...", flush=True)
        results.syncs = measure_syncs(root, small, rounds.syncs, sqlite=has_sqlite)
    else:
        results.notes.append(f"syncs not counted: {reason}")
    print(f"watch latency, {rounds.watch} saves per case...", flush=True)
    results.watch = measure_watch(root, small, rounds.watch, sqlite=has_sqlite, poll=poll)
    return results


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m bench.bench_vs_sqlite",
        description="Time handoff-files beside LangGraph's SqliteSaver and minimal baselines, in one run.",
    )
    parser.add_argument("--quick", action="store_true", help="few rounds: a smoke run, not a figure")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="Markdown report to write")
    parser.add_argument("--dir", type=Path, default=None, help="scratch directory (default: the system temp dir)")
    parser.add_argument("--no-sqlite", action="store_true", help="leave SqliteSaver out even if installed")
    parser.add_argument(
        "--poll-ms", type=float, default=POLL_INTERVAL * 1e3, help="the SqliteSaver reader's poll interval"
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the comparison, print its tables and write the report.

    :returns: 0, whether or not the goals are met (a miss is printed as MISSED): a report, not a test.
    """
    args = _parser().parse_args(argv)
    started, load_at_start = time.monotonic(), os.getloadavg()
    with tempfile.TemporaryDirectory(prefix="handoff-vs-sqlite-", dir=args.dir) as scratch:
        root = Path(scratch)
        facts = machine_facts(root)
        results = run(root, QUICK if args.quick else FULL, sqlite=not args.no_sqlite, poll=args.poll_ms / 1e3)
    elapsed = time.monotonic() - started
    facts += [
        ("langgraph", _versions()),
        ("SQLite as SqliteSaver runs it", "; ".join(f"{k} {v}" for k, v in results.sqlite_settings.items()) or "n/a"),
        ("handoff-files durability modes measured", ", ".join(results.durabilities)),
        ("load average (1, 5, 15 min) at start", ", ".join(f"{x:.2f}" for x in load_at_start)),
        ("command", "make bench (runs python -m bench.bench_vs_sqlite in .venv-bench)"),
        ("run time", f"{elapsed:.0f} s"),
        run_kind(quick=args.quick),
    ]
    for title, headers, rows, left in tables(results):
        print(f"\n{title}\n")
        print(text_table(headers, rows, left=left))
    print()
    for line in [*results.notes, *(misses(results) or ["all goals met"])]:
        print(line)
    write_report(args.out, "handoff-files beside LangGraph's SqliteSaver", facts, sections(results))
    print(f"\nwrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
