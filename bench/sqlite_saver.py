"""LangGraph's ``SqliteSaver`` as a benchmark contender: put, get_tuple and the SQLite settings it runs with.

``langgraph-checkpoint-sqlite`` is installed only in the bench environment (``make bench`` makes
``.venv-bench``), so nothing here imports it at module level: :func:`missing` says whether it can
be had, and the benches leave its column out, with that reason, where it cannot.
"""

from __future__ import annotations

import importlib
import sqlite3
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final

__all__ = ["FRESH_GET_TUPLE", "THREAD_ID", "Saver", "missing"]

THREAD_ID: Final = "bench-thread"
_MODULE: Final = "langgraph.checkpoint.sqlite"
_SYNCHRONOUS: Final = {0: "OFF", 1: "NORMAL", 2: "FULL", 3: "EXTRA"}

#: A fresh process's read of the newest checkpoint, as LangGraph's docs open a saver on disk;
#: ``python -c FRESH_GET_TUPLE DB THREAD`` exits 3 if it found nothing.
FRESH_GET_TUPLE: Final = """\
import sys
from langgraph.checkpoint.sqlite import SqliteSaver
with SqliteSaver.from_conn_string(sys.argv[1]) as saver:
    found = saver.get_tuple({"configurable": {"thread_id": sys.argv[2], "checkpoint_ns": ""}})
sys.exit(0 if found is not None and found.checkpoint["channel_values"] else 3)
"""


def missing() -> str | None:
    """Why ``SqliteSaver`` cannot be measured in this environment, or ``None`` when it can."""
    try:
        importlib.import_module(_MODULE)
    except ImportError as exc:
        return (
            f"SqliteSaver not measured: {exc.name or _MODULE} is not installed here "
            "(`make bench` installs langgraph-checkpoint-sqlite into .venv-bench)"
        )
    return None


class Saver:
    """One LangGraph thread in a SQLite file, written and read as LangGraph's own loop does.

    The saver is built as LangGraph's docs show (``sqlite3.connect(path, check_same_thread=False)``)
    and left at its defaults: its ``setup()`` turns on WAL and leaves ``synchronous`` as SQLite
    compiled it. Each :meth:`put` is a new checkpoint whose parent is the previous one, the
    content in ``channel_values``, as a graph step stores its state.

    :param path: the database file (created if missing).
    :param thread_id: LangGraph's thread id.
    """

    def __init__(self, path: Path, thread_id: str = THREAD_ID) -> None:
        # imported by name: the test environment has no langgraph, and mypy there cannot see it
        saver_module: Any = importlib.import_module(_MODULE)
        self._base: Any = importlib.import_module("langgraph.checkpoint.base")
        self.path = path
        self.connection = sqlite3.connect(path, check_same_thread=False)
        self._saver: Any = saver_module.SqliteSaver(self.connection)
        self.thread: dict[str, Any] = {"configurable": {"thread_id": thread_id, "checkpoint_ns": ""}}
        self._parent: dict[str, Any] = self.thread
        self.step = 0

    def put(self, content: Mapping[str, Any]) -> None:
        """Store *content* as the thread's next checkpoint; returns once SQLite committed it."""
        self.step += 1
        checkpoint = self._base.empty_checkpoint()
        checkpoint["channel_values"] = {"handoff": content}
        checkpoint["channel_versions"] = {"handoff": self.step}
        metadata = {"source": "loop", "step": self.step, "parents": {}}
        self._parent = self._saver.put(self._parent, checkpoint, metadata, {"handoff": self.step})

    def get_tuple(self) -> Any:
        """The newest checkpoint of the thread, deserialised (``None`` if there is none)."""
        return self._saver.get_tuple(self.thread)

    def newest_step(self) -> int | None:
        """The ``step`` of the newest checkpoint (one :meth:`get_tuple`), or ``None``."""
        found = self.get_tuple()
        return None if found is None else int(found.metadata["step"])

    def content(self) -> Any:
        """The content of the newest checkpoint, as :meth:`put` stored it."""
        found = self.get_tuple()
        return None if found is None else found.checkpoint["channel_values"]["handoff"]

    def stored_bytes(self) -> int:
        """The size of the newest checkpoint's serialised blob in the database."""
        row = self.connection.execute(
            "SELECT length(checkpoint) FROM checkpoints WHERE thread_id = ? ORDER BY checkpoint_id DESC LIMIT 1",
            (self.thread["configurable"]["thread_id"],),
        ).fetchone()
        return int(row[0]) if row else 0

    def settings(self) -> dict[str, str]:
        """The SQLite settings the saver's connection runs with (read after its ``setup()``)."""
        self._saver.setup()
        pragma = self.connection.execute
        options = [row[0] for row in pragma("PRAGMA compile_options")]
        compiled = [o for o in options if o.startswith(("DEFAULT_SYNCHRONOUS", "DEFAULT_WAL_SYNCHRONOUS"))]
        synchronous = int(pragma("PRAGMA synchronous").fetchone()[0])
        return {
            "sqlite": sqlite3.sqlite_version,
            "journal_mode": str(pragma("PRAGMA journal_mode").fetchone()[0]),
            "synchronous": f"{synchronous} ({_SYNCHRONOUS.get(synchronous, '?')})",
            "wal_autocheckpoint": f"{pragma('PRAGMA wal_autocheckpoint').fetchone()[0]} pages",
            "page_size": f"{pragma('PRAGMA page_size').fetchone()[0]} B",
            "compiled defaults": ", ".join(compiled) or "not reported",
        }

    def close(self) -> None:
        """Close the connection (the last one to close checkpoints the WAL into the database)."""
        self.connection.close()
