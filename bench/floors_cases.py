"""The contenders of issue 21's goals bench: the floors in plain os calls, fresh copies, the graph, strace counts.

Every contender is a zero-argument callable made by :func:`contender` from a case name, a work
folder and the handoff content, so the same case runs in process (timed) and in a child under
``strace`` (counted) without two definitions that could drift apart.
"""

from __future__ import annotations

import itertools
import os
import re
import shutil
import sqlite3
import subprocess
import sys
import tempfile
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any, Final, TypedDict

import blake3
import orjson

from bench.fresh import SYNC_CALLS, child_env
from handoff_files import HandoffStore

__all__ = [
    "GRAPH_STEPS",
    "SAVE_CASES",
    "Copies",
    "FullFloor",
    "JournalFloor",
    "contender",
    "graph_run",
    "read_parse_hash",
    "syscalls_per_op",
]

AGENT_ID: Final = "bench-agent"
GRAPH_STEPS: Final = 30
#: The saves and their floors, as :func:`contender` names them ("default": a store opened with no durability).
SAVE_CASES: Final = ("save:default", "save:journal", "save:full", "floor:journal", "floor:full", "put")
_MODE: Final = 0o600
# one line per call in `strace -f -o` output; a call strace saw interrupted shows again as "<... resumed>"
_ANY_CALL: Final = re.compile(r"^\d+\s+[a-z_0-9]+\(", re.MULTILINE)
_SYNC_CALL: Final = re.compile(rf"^\d+\s+(?:{'|'.join(SYNC_CALLS)})\(", re.MULTILINE)


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    while view:
        view = view[os.write(fd, view) :]


def _unsynced_replace(path: Path, data: bytes) -> None:
    """A readable copy: temp file beside *path*, write, close, rename over it; no flush (readers never see half)."""
    tmp = path.with_name(f".{path.name}.tmp")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, _MODE)
    try:
        _write_all(fd, data)
    finally:
        os.close(fd)
    os.rename(tmp, path)  # noqa: PTH104 -- the floor is plain os calls, nothing pathlib adds


class JournalFloor:
    """The floor of a journal-first save: append the record to an open log + fdatasync, then the two readable copies.

    :param folder: where the log, the primary and ``state.json`` live (created).
    :param record: the log record (the sealed document, one line of compact JSON).
    :param primary: the readable primary's bytes.
    :param state: ``state.json``'s bytes.
    """

    def __init__(self, folder: Path, record: bytes, primary: bytes, state: bytes) -> None:
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        self.folder, self.record, self.primary, self.state = folder, record, primary, state
        # kept open, as a database keeps its write-ahead log open
        self.log = os.open(folder / "journal.jsonl", os.O_WRONLY | os.O_CREAT | os.O_APPEND, _MODE)

    def __call__(self) -> None:
        """One save: the commit point (appended and fdatasynced), then the unsynced copies."""
        _write_all(self.log, self.record)
        os.fdatasync(self.log)
        _unsynced_replace(self.folder / "handoff.json", self.primary)
        _unsynced_replace(self.folder / "state.json", self.state)


class FullFloor:
    """The floor of a full save: a new file (temp, write, fsync, rename, directory fsync), then the readable copies.

    Each call commits a new name in ``history/`` (a rename with nothing to replace, as a new
    generation's file is); old ones are left, as pruning is housekeeping, not the promise.
    """

    def __init__(self, folder: Path, document: bytes, state: bytes) -> None:
        self.history = folder / "history"
        self.history.mkdir(parents=True, exist_ok=True, mode=0o700)
        self.folder, self.document, self.state = folder, document, state
        self.generation = itertools.count(1)

    def __call__(self) -> None:
        """One save: the durable new file, then the unsynced primary and ``state.json``."""
        target = self.history / f"{next(self.generation):08d}.json"
        tmp = self.history / f".{target.name}.tmp"
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, _MODE)
        try:
            _write_all(fd, self.document)
            os.fsync(fd)
        finally:
            os.close(fd)
        os.rename(tmp, target)  # noqa: PTH104 -- as above
        # fsync the directory: the rename is not durable until its entry is
        dir_fd = os.open(self.history, os.O_RDONLY | os.O_DIRECTORY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)
        _unsynced_replace(self.folder / "handoff.json", self.document)
        _unsynced_replace(self.folder / "state.json", self.state)


def read_parse_hash(path: Path) -> str:
    """Read *path*, ``orjson.loads`` it and BLAKE3 its bytes: the floor under a verified load."""
    data = path.read_bytes()
    orjson.loads(data)
    return blake3.blake3(data).hexdigest()


class Copies:
    """Fresh copies of a file, made ahead, handed out one per call: each is a file this process never read.

    :param source: the file to copy.
    :param folder: where the copies go (created).
    :param count: how many (a call past the last raises ``StopIteration``).
    """

    def __init__(self, source: Path, folder: Path, count: int) -> None:
        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        data = source.read_bytes()
        paths = [folder / f"{i:06d}{source.suffix}" for i in range(count)]
        for path in paths:
            path.write_bytes(data)
        self._paths: Iterator[Path] = iter(paths)

    def __call__(self) -> Path:
        """The next unread copy."""
        return next(self._paths)


def _thread_bytes(store: HandoffStore) -> tuple[bytes, bytes, bytes]:
    """A saved thread's primary, its sealed document as one compact JSON line, and its ``state.json``."""
    primary = store.primary.read_bytes()
    record = orjson.dumps(orjson.loads(primary)) + b"\n"
    return primary, record, (store.path / "state.json").read_bytes()


def _store(folder: Path, case: str) -> HandoffStore:
    mode = case.partition(":")[2]
    options: dict[str, Any] = {} if mode == "default" else {"durability": mode}
    return HandoffStore(folder, agent_id=AGENT_ID, **options)


def contender(case: str, folder: Path, content: Mapping[str, Any], *, keep: int = 10) -> Callable[[], object]:
    """The callable that performs one *case* on *content* in *folder* (made here, not yet existing).

    ``save:default|journal|full``: ``HandoffStore.save`` (after *keep* + 2 saves, so history is full);
    ``floor:journal|full``: the floors, on the bytes such a store wrote; ``put``: ``SqliteSaver.put``.
    """
    if case.startswith("save:"):
        store = _store(folder / "thread", case)
        for _ in range(keep + 2):
            store.save(content)
        return lambda: store.save(content)
    if case.startswith("floor:"):
        store = _store(folder / "source", "save:" + case.partition(":")[2])
        store.save(content)
        primary, record, state = _thread_bytes(store)
        if case == "floor:journal":
            return JournalFloor(folder / "floor", record, primary, state)
        return FullFloor(folder / "floor", primary, state)
    if case == "put":
        from bench.sqlite_saver import Saver

        folder.mkdir(parents=True, exist_ok=True, mode=0o700)
        saver = Saver(folder / "langgraph.sqlite")
        for _ in range(keep + 2):
            saver.put(content)
        return lambda: saver.put(content)
    msg = f"unknown case {case!r}"
    raise ValueError(msg)


# -- a LangGraph graph: GRAPH_STEPS steps, each rewriting a payload of the state's size -------------


class GraphState(TypedDict, total=False):
    """The graph's state: a payload of the chosen size and a step counter."""

    payload: str
    count: int


def _graph(saver: Any, size: int) -> Any:
    from langgraph.graph import END, START, StateGraph

    def step(state: GraphState) -> GraphState:
        count = state.get("count", 0) + 1
        return {"count": count, "payload": (f"{count:06d} " * (size // 7 + 1))[:size]}

    def route(state: GraphState) -> str:
        return "step" if state.get("count", 0) < GRAPH_STEPS else END

    graph = StateGraph(GraphState)
    graph.add_node("step", step)
    graph.add_edge(START, "step")
    graph.add_conditional_edges("step", route, ["step", END])
    return graph.compile(checkpointer=saver)


def _saver(name: str, folder: Path) -> Any:
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    if name == "HandoffSaver":
        from handoff_files.langgraph import HandoffSaver

        return HandoffSaver(folder / "graphs")
    # by name: langgraph-checkpoint-sqlite is in .venv-bench only, where mypy does not look
    module: Any = __import__("langgraph.checkpoint.sqlite", fromlist=["SqliteSaver"])
    saver = module.SqliteSaver(sqlite3.connect(folder / "graphs.sqlite", check_same_thread=False))
    saver.setup()
    return saver


def graph_run(name: str, folder: Path, size: int) -> Callable[[], object]:
    """One whole ``invoke`` of the graph on a fresh thread, ``durability="sync"``, on *name*'s saver."""
    graph = _graph(_saver(name, folder), size)
    counter = itertools.count()

    def run() -> object:
        config = {"configurable": {"thread_id": f"run-{next(counter)}"}, "recursion_limit": 4 * GRAPH_STEPS}
        return graph.invoke({"count": 0, "payload": ""}, config, durability="sync")

    return run


# -- strace: system calls and flushes per operation -------------------------------------------------

#: ``python -c CHILD WORKDIR CASE CONTENT_FILE SIZE OPS``: three warm-up operations, then OPS counted ones.
CHILD: Final = """\
import sys
from pathlib import Path
import orjson
from bench.floors_cases import contender, graph_run
workdir, case, content_file, size, ops = sys.argv[1:]
if case.startswith("graph:"):
    op = graph_run(case.partition(":")[2], Path(workdir), int(size))
else:
    op = contender(case, Path(workdir), orjson.loads(Path(content_file).read_bytes()))
for _ in range(int(ops) + 3):
    op()
"""


def _traced(workdir: Path, args: tuple[str, ...], ops: int) -> tuple[int, int]:
    strace = shutil.which("strace")
    if strace is None:
        msg = "strace is not installed"
        raise RuntimeError(msg)
    trace = workdir.with_suffix(".strace")
    argv = [strace, "-f", "-qq", "-o", str(trace), sys.executable, "-c", CHILD, str(workdir), *args, str(ops)]
    done = subprocess.run(argv, env=child_env(), capture_output=True, check=False)
    if done.returncode:
        msg = f"{args[0]} under strace exited {done.returncode}: {done.stderr.decode(errors='replace')[-2000:]}"
        raise RuntimeError(msg)
    text = trace.read_text(encoding="utf-8", errors="replace")
    return len(_ANY_CALL.findall(text)), len(_SYNC_CALL.findall(text))


def syscalls_per_op(case: str, content: Mapping[str, Any], *, size: int = 0, ops: int = 10) -> tuple[float, float]:
    """(system calls, flushes) per operation of *case*, counted with ``strace -f`` in a child.

    The child runs twice, with 0 and *ops* counted operations after the same set-up and warm-up;
    the difference ÷ *ops* is the answer (imports, set-up and exit cancel out). Flushes are the
    fsync family (:data:`bench.fresh.SYNC_CALLS`). A ``graph:<saver>`` case's operation is a
    whole graph run of :data:`GRAPH_STEPS` steps at *size* bytes.

    :raises RuntimeError: if strace is missing or the child fails.
    """
    with tempfile.TemporaryDirectory(prefix="bench-floors-strace-") as scratch:
        content_file = Path(scratch) / "content.json"
        content_file.write_bytes(orjson.dumps(dict(content)))
        args = (case, str(content_file), str(size))
        calls0, syncs0 = _traced(Path(scratch) / "zero", args, 0)
        calls, syncs = _traced(Path(scratch) / "many", args, ops)
    return (calls - calls0) / ops, (syncs - syncs0) / ops
