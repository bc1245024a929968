"""Feed the hostile corpus to one entry point, in this process, under a time and memory bound per input.

Usage: ``python -m tests.hostile_run ENTRY WORKDIR SEED_START SEED_STOP PER_SEED LARGE [NAME ...]``.

Run as a child by ``tests/test_hostile_corpus.py``: a crash kills only this process, and the
parent's timeout catches a hang the per-input alarm cannot interrupt. One JSON line goes to
stdout before each input (``start``, so a crash names its input) and one after it (its verdict,
the seconds it took and how far resident memory grew, measured as ``bench/bench_hostile.py`` does).
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any, Final

from handoff_files import (
    Handoff,
    HandoffError,
    HandoffInbox,
    HandoffStore,
    LocalBlobStore,
    Restored,
    handoff_checkpoint,
    load,
    verify_checkpoint,
)
from handoff_files.format.codec import MAX_FILE_BYTES
from handoff_files.foundation.atomic import read_bytes
from tests.hostile_corpus import Hostile, corpus

#: One input's bound: the inputs that hung or crashed before their bounds took minutes or never
#: ended; refused, they take milliseconds. Loose, so a loaded, shared machine never fails it.
SECONDS: Final = 10.0
#: The child's address space: a memory blow-up fails as a MemoryError instead of swapping the machine.
ADDRESS_SPACE: Final = 3 << 30


@dataclass(frozen=True)
class Entry:
    """A place a hostile file can reach: the file it is put in, what is removed first, and who reads it."""

    name: str
    target: str  # relative to the thread; for the inbox, descriptor and LangGraph readers a label (see _target)
    reader: str = "restore"  # restore | load | cli | inbox | descriptor
    format: str = "json"
    durability: str = "full"
    remove: tuple[str, ...] = ()
    checksummed: bool = True  # False: the file carries no checksum, so random bit flips are its known finding


ENTRIES: Final = {
    entry.name: entry
    for entry in (
        Entry("primary-json", "handoff.json"),
        Entry("primary-yaml", "handoff.yaml", format="yaml"),
        Entry("history-json", "history/00000003.json", remove=("handoff.json",)),
        Entry("history-yaml", "history/00000003.yaml", format="yaml", remove=("handoff.yaml",)),
        Entry("state", "state.json", remove=("handoff.json", "history")),
        Entry("journal", "journal.jsonl", durability="journal", remove=("handoff.json", "history")),
        Entry("load", "handoff.json", reader="load"),
        Entry("validate-cli", "handoff.json", reader="cli"),
        Entry("inbox-request", "request", reader="inbox"),
        Entry("descriptor", "descriptor.json", reader="descriptor"),
        Entry("langgraph-writes", "pending writes", reader="langgraph"),
    )
}


class Hang(BaseException):
    """The per-input alarm rang (a BaseException, so no ``except Exception`` in the library swallows it)."""


def _alarm(_signum: int, _frame: FrameType | None) -> None:
    raise Hang


@dataclass
class Seed:
    """The files every input is derived from, made by the library itself, and what it wrote.

    Only what the entry's reader needs is made (the inbox, the descriptor and LangGraph cost imports).
    """

    root: Path
    generations: dict[int, Handoff]
    outside: bytes  # a valid sealed handoff of another thread: what a planted link points at
    outside_handoff: Handoff  # that handoff: a direct read of a link given by name may return it
    request_id: str = ""
    request: object = None
    writes: Path = Path()  # a LangGraph checkpoint's pending writes, relative to the seed
    pending: object = None  # what the saver read back from them


def _content(i: int) -> dict[str, Any]:
    return {
        "narrative": f"gen {i}",
        "state": {"error_count": i, "energy_level": 1.0, "data": {"n": i}},
        "priorities": [{"task": "port the rest", "urgency": "first"}],
        "warnings": [{"text": f"warning {i}"}],
    }


def make_seed(entry: Entry, root: Path) -> Seed:
    """A thread of three generations under *root*/seed, and what else *entry*'s reader reads."""
    seed = root / "seed"
    store = HandoffStore(seed / "alpha", format=entry.format, durability=entry.durability)  # type: ignore[arg-type]
    for i in range(3):
        store.save(_content(i))
    generations = {g: load(path) for g in (1, 2, 3) for path in store.history_dir.glob(f"{g:08d}.*")}
    other = HandoffStore(root / "other" / "beta", format=entry.format)  # type: ignore[arg-type]
    outside_path = other.save(_content(2)).path
    made = Seed(seed, generations, outside_path.read_bytes(), load(outside_path))
    if entry.reader == "inbox":
        inbox = HandoffInbox(seed / "inbox")
        made.request_id = inbox.request_handoff("alpha", "beta", "gen 2 needs SQL").handoff_id
        made.request = inbox.get_handoff(made.request_id)
    elif entry.reader == "descriptor":
        descriptor = handoff_checkpoint(seed / "alpha", blobs=LocalBlobStore(seed / "blobs"), to_agent="beta")
        (seed / "descriptor.json").write_text(descriptor.to_json(), encoding="utf-8")
    elif entry.reader == "langgraph":
        made.writes, made.pending = _graph(seed / "graphs")
    return made


def _graph(root: Path) -> tuple[Path, object]:
    """A LangGraph checkpoint with two pending writes: their file, and what the saver reads back."""
    from langgraph.checkpoint.base import create_checkpoint, empty_checkpoint  # only this entry pays for LangGraph

    from handoff_files.langgraph import HandoffSaver  # only this entry pays for LangGraph

    saver = HandoffSaver(root)
    checkpoint = create_checkpoint(empty_checkpoint(), None, 1)
    checkpoint["channel_values"] = {"n": 2}
    checkpoint["channel_versions"] = {"n": 3}
    config = saver.put(_GRAPH, checkpoint, {"run_id": "run-2"}, {})
    saver.put_writes(config, [("n", 3), ("note", "gen 2")], task_id="task")
    [path] = (root / "t" / "writes").glob("*.jsonl")
    return path.relative_to(root.parent), _pending(root)


_GRAPH: Final[Any] = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}


def _pending(root: Path) -> object:
    from handoff_files.langgraph import HandoffSaver  # only this entry pays for LangGraph

    got = HandoffSaver(root).get_tuple(_GRAPH)
    return None if got is None else got.pending_writes


#: The parts of the seed each reader needs, copied per input.
_PARTS: Final = {
    "restore": ("alpha",),
    "load": ("alpha",),
    "cli": ("alpha",),
    "inbox": ("inbox",),
    "descriptor": ("blobs", "descriptor.json"),
    "langgraph": ("graphs",),
}


def _target(entry: Entry, seed: Seed, case: Path) -> Path:
    if entry.reader == "inbox":
        return case / "inbox" / "requests" / f"{seed.request_id}.json"
    if entry.reader == "descriptor":
        return case / "descriptor.json"
    if entry.reader == "langgraph":
        return case / seed.writes
    return case / "alpha" / entry.target


def place(hostile: Hostile, target: Path, outside: bytes, case: Path) -> int:
    """Put *hostile* at *target* (which holds the original): returns the bytes written.

    A planted link points at a file in *case*, outside the thread: for a handoff, another thread's
    valid sealed generation (read, it would be content this thread never had); else the original.
    """
    original = target.read_bytes()
    target.unlink()
    if hostile.mutate is not None:
        data = hostile.mutate(original)
        target.write_bytes(data)
        target.chmod(0o600)
        return len(data)
    elsewhere = case / f"outside-{target.name}"
    elsewhere.write_bytes(outside if target.name.startswith(("handoff.", "0000")) else original)
    if hostile.shape == "fifo":
        os.mkfifo(target, 0o600)
    elif hostile.shape == "sparse":
        target.write_bytes(original)
        os.truncate(target, 8 << 30)
    elif hostile.shape == "symlink":
        target.symlink_to(elsewhere)
    elif hostile.shape == "hardlink":
        os.link(elsewhere, target)
    else:
        target.mkdir()
    return 0


def _restore(thread: Path, target: Path, seed: Seed) -> str:
    return classify(HandoffStore(thread).restore(), target, seed)


def classify(restored: Restored, target: Path, seed: Seed) -> str:
    """The verdict on a restore: the generation it was, an older one with the damage named, or wrong."""
    known = seed.generations.get(restored.generation)
    if known is None:
        return f"wrong: generation {restored.generation} was never written"
    if restored.source == "rebuilt":
        if restored.handoff.state != known.state:
            return f"wrong: rebuilt state {restored.handoff.state!r} is not generation {restored.generation}'s"
    elif restored.handoff != known:
        return f"wrong: generation {restored.generation} from {restored.source} differs from the one written"
    where = f"{restored.source} {restored.generation}"
    if restored.source != "rebuilt" and restored.path == target and restored.generation == max(seed.generations):
        return f"equal: {where}"  # the hostile file itself read back as the generation it was
    return f"recovered: {where}" if restored.problems else f"unreported: {where}, no problem named"


def _cli(path: Path, seed: Seed) -> str:
    done = subprocess.run(
        [sys.executable, "-m", "handoff_files", "validate", str(path)],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    lines = done.stderr.splitlines()
    if done.returncode == 0:
        if load(path) in (seed.generations[3], seed.outside_handoff):
            return "equal"
        return "wrong: validate passed a changed file"
    if done.returncode == 1 and len(lines) == 1 and lines[0].startswith(f"handoff: {path.parent}"):
        return "refused"
    return f"crash: exit {done.returncode}, stderr {done.stderr[-400:]!r}"


def _load(seed: Seed, case: Path, target: Path) -> str:
    # a link given by name is the file the user named: its own verified content is a right answer
    return "equal" if load(target) in (seed.generations[3], seed.outside_handoff) else "wrong: load changed it"


def _writes(seed: Seed, case: Path, target: Path) -> str:
    got = _pending(case / "graphs")
    if got == seed.pending:
        return "equal"
    if isinstance(got, list) and isinstance(seed.pending, list) and got == seed.pending[: len(got)]:
        return f"dropped: read {len(got)} of the {len(seed.pending)} pending writes, and said nothing"
    return f"wrong: pending writes read as {got!r}"[:600]


def _inbox(seed: Seed, case: Path, target: Path) -> str:
    got = HandoffInbox(case / "inbox").get_handoff(seed.request_id)
    return "equal" if got == seed.request else f"wrong: request read as {got!r}"


def _descriptor(seed: Seed, case: Path, target: Path) -> str:
    data, _ = read_bytes(target, MAX_FILE_BYTES)  # as `handoff adopt FILE` reads it
    handoff = verify_checkpoint(data, blobs=LocalBlobStore(case / "blobs"))
    return "equal" if handoff == seed.generations[3] else "wrong: the descriptor verified a changed handoff"


_READERS: Final[dict[str, Callable[[Seed, Path, Path], str]]] = {
    "restore": lambda seed, case, target: _restore(case / "alpha", target, seed),
    "load": _load,
    "cli": lambda seed, _case, target: _cli(target, seed),
    "langgraph": _writes,
    "inbox": _inbox,
    "descriptor": _descriptor,
}


def read(entry: Entry, seed: Seed, case: Path, target: Path) -> str:
    """Read *target* the way *entry* does and give the verdict (a HandoffError is handled by the caller)."""
    return _READERS[entry.reader](seed, case, target)


def _rss(field: str) -> int:
    with open("/proc/self/status", encoding="ascii") as status:
        return next(int(line.split()[1]) * 1024 for line in status if line.startswith(field))


def judge(entry: Entry, seed: Seed, case: Path, target: Path) -> str:
    """The verdict on one placed input: a refusal counts only when it names the file (or its folder)."""
    try:
        return read(entry, seed, case, target)
    except HandoffError as exc:
        named = entry.reader == "descriptor" or str(case) in str(exc)
        return "refused" if named else f"unnamed: {type(exc).__name__}: {exc}"[:600]
    except Exception as exc:  # the verdict: any other exception escaping is what this looks for
        return f"escaped: {type(exc).__name__}: {exc}"[:600]


def bounded(entry: Entry, seed: Seed, case: Path, target: Path, seconds: float) -> str:
    """:func:`judge` under an alarm of *seconds*: a read still running then is a ``hang``."""
    previous = signal.signal(signal.SIGALRM, _alarm)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        return judge(entry, seed, case, target)
    except Hang:
        return f"hang: still running after {seconds} s"
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def run(
    entry: Entry,
    work: Path,
    inputs: list[Hostile],
    emit: Callable[[dict[str, Any]], None],
    *,
    seconds: float = SECONDS,
) -> None:
    """Feed every input to *entry*, each in a fresh copy of the seed, emitting its start and its verdict."""
    seed = make_seed(entry, work)
    warm = work / "warm-up"  # the first read imports what it uses: not an input's time or memory
    for part in _PARTS[entry.reader]:
        _copy(seed.root / part, warm / part)
    bounded(entry, seed, warm, _target(entry, seed, warm), seconds)
    for i, hostile in enumerate(inputs):
        case = work / f"case{i}"
        for part in _PARTS[entry.reader]:
            _copy(seed.root / part, case / part)
        for name in entry.remove:
            path = case / "alpha" / name
            shutil.rmtree(path) if path.is_dir() else path.unlink()
        target = _target(entry, seed, case)
        size = place(hostile, target, seed.outside, case)
        emit({"start": hostile.name})
        if os.environ.get("HOSTILE_CRASH_AT") == hostile.name:  # a crash on demand: the parent's report is tested
            os.kill(os.getpid(), signal.SIGKILL)  # not abort(): no core file
        with open("/proc/self/clear_refs", "w", encoding="ascii") as clear:
            clear.write("5")  # the peak (VmHWM) from here: earlier inputs' peaks are not this one's
        before = _rss("VmRSS:")
        started = time.perf_counter()
        verdict = bounded(entry, seed, case, target, seconds)
        took = time.perf_counter() - started
        growth = _rss("VmHWM:") - before
        emit({"name": hostile.name, "verdict": verdict, "seconds": took, "growth": growth, "size": size})
        _drop_large(target)


def _copy(source: Path, destination: Path) -> None:
    if source.is_dir():
        shutil.copytree(source, destination, symlinks=True)
    else:
        destination.parent.mkdir(exist_ok=True)
        shutil.copy2(source, destination)


def _drop_large(target: Path) -> None:
    """Remove a large input now; the small files stay for the test's tmp_path (an rmtree per input costs more)."""
    if target.is_file() and not target.is_symlink() and target.stat().st_size > 1 << 20:
        target.unlink()


def main(argv: list[str]) -> None:
    """Parse the arguments (see the module's docstring) and run."""
    name, work, start, stop, per_seed, large, *only = argv
    resource.setrlimit(resource.RLIMIT_AS, (ADDRESS_SPACE, ADDRESS_SPACE))
    inputs = corpus(seeds=range(int(start), int(stop)), per_seed=int(per_seed), large=large == "1")
    entry = ENTRIES[name]
    if only:
        inputs = [hostile for hostile in inputs if hostile.name in only]
    elif not entry.checksummed:  # its bit flips are a known finding, run by name (an xfail test)
        inputs = [hostile for hostile in inputs if not hostile.name.startswith("flip")]

    def emit(line: dict[str, Any]) -> None:
        print(json.dumps(line), flush=True)

    run(entry, Path(work), inputs, emit)


if __name__ == "__main__":
    main(sys.argv[1:])
