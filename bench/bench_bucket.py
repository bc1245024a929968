"""A thread on object storage: requests, bytes and time per save and per restore, against the floor of each promise.

``python -m bench.bench_bucket [--rounds N] [--out FILE]`` starts a SeaweedFS server on loopback
(:mod:`bench.seaweed`), and measures ``HandoffStore("s3://…")`` saves and restores of 1 KB and
100 KB handoffs, counting every request the store makes (a counting wrapper around the thread's
own storage: the same calls, passed through). The floor of a save is the one request its promise
needs (a conditional ``PUT`` of the same bytes: the commit); the floor of a restore is a listing
and one ``GET`` of the same thread's objects, bare. Both are measured in the same run,
interleaved. Costs are at S3 Standard's public prices in us-east-1 (PUT/LIST/DELETE $0.005 per
1,000, GET $0.0004 per 1,000): what the requests counted here would cost on S3, not SeaweedFS.
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
import time
import uuid
from collections import Counter
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from bench.seaweed import SeaweedServer
from handoff_files import HandoffStore
from handoff_files.storage import Storage, Stored, open_storage

__all__ = ["Counting", "main"]

#: S3 Standard, us-east-1, per request (USD)
PRICE: Final = {"put": 0.005 / 1000, "list": 0.005 / 1000, "delete": 0.005 / 1000, "get": 0.0004 / 1000}
_KIND: Final = {"read": "get", "create": "put", "replace": "put", "list": "list", "remove": "delete"}


@dataclass
class Counting:
    """A storage that counts each call by its S3 request kind and the bytes each way, passing every call on."""

    inner: Storage
    calls: Counter[str] = field(default_factory=Counter)
    sent: int = 0
    received: int = 0

    @property
    def where(self) -> str:
        return self.inner.where

    def read(self, key: str, *, limit: int) -> Stored:
        self.calls["get"] += 1
        stored = self.inner.read(key, limit=limit)
        self.received += len(stored.data)
        return stored

    def read_changed(self, key: str, etag: str, *, limit: int) -> Stored | None:
        self.calls["get"] += 1
        stored = self.inner.read_changed(key, etag, limit=limit)
        self.received += 0 if stored is None else len(stored.data)
        return stored

    def create(self, key: str, data: bytes) -> str:
        self.calls["put"] += 1
        self.sent += len(data)
        return self.inner.create(key, data)

    def replace(self, key: str, data: bytes, etag: str) -> str:
        self.calls["put"] += 1
        self.sent += len(data)
        return self.inner.replace(key, data, etag)

    def list(self, prefix: str = "") -> list[str]:
        self.calls["list"] += 1
        return self.inner.list(prefix)

    def remove(self, key: str) -> None:
        self.calls["delete"] += 1
        self.inner.remove(key)


def _content(size: int, step: int) -> dict[str, Any]:
    return {"narrative": f"step {step}", "state": {"data": {"step": step, "pad": "x" * size}}}


def _counted(store: HandoffStore) -> Counting:
    objects = store._objects  # type: ignore[attr-defined]  # the bench counts the store's own calls
    counting = Counting(objects.storage)
    objects.storage = objects._copies.storage = counting  # the commit's requests and the copies' alike
    return counting


def _measure(url: str, size: int, rounds: int) -> dict[str, Any]:
    store = HandoffStore(url, thread_id="bench", keep=10)
    counting = _counted(store)
    floor = open_storage(url.rsplit("/", 1)[0] + "/floor-" + uuid.uuid4().hex[:8])
    store.save(_content(size, 0))  # the thread exists: every save measured is a usual one
    counting.calls.clear()
    counting.sent = counting.received = 0
    saves, floors_save, restores, floors_restore = [], [], [], []
    data = b"x" * (size + 700)  # about the bytes of a generation of this size
    for step in range(1, rounds + 1):
        started = time.perf_counter()
        store.save(_content(size, step))
        saves.append(time.perf_counter() - started)
        started = time.perf_counter()
        floor.create(f"history/{step:08d}.json", data)
        floors_save.append(time.perf_counter() - started)
    save_calls, sent = Counter(counting.calls), counting.sent
    counting.calls.clear()
    counting.received = 0
    reader = HandoffStore(url)
    reading = _counted(reader)
    bare = open_storage(url)
    for _ in range(rounds):
        started = time.perf_counter()
        reader.restore()
        restores.append(time.perf_counter() - started)
        started = time.perf_counter()
        keys = bare.list("history/")  # the same thread's objects, bare: one listing, one GET
        bare.read(keys[-1], limit=1 << 24)
        floors_restore.append(time.perf_counter() - started)
    return {
        "size": size,
        "save_ms": statistics.median(saves) * 1000,
        "save_floor_ms": statistics.median(floors_save) * 1000,
        "restore_ms": statistics.median(restores) * 1000,
        "restore_floor_ms": statistics.median(floors_restore) * 1000,
        "save_calls": {kind: count / rounds for kind, count in save_calls.items()},
        "save_sent": sent / rounds,
        "restore_calls": {kind: count / rounds for kind, count in reading.calls.items()},
        "restore_received": reading.received / rounds,
    }


def _cost(calls: dict[str, float]) -> float:
    return sum(PRICE[kind] * count for kind, count in calls.items())


def _table(results: list[dict[str, Any]]) -> str:
    lines = [
        "| size | op | requests (LIST/GET/PUT/DELETE) | bytes | median ms | floor ms | ÷ floor | USD per 1M on S3 |",
        "|---|---|---|---:|---:|---:|---:|---:|",
    ]
    for r in results:
        for op, calls, moved, ms, floor in (
            ("save", r["save_calls"], r["save_sent"], r["save_ms"], r["save_floor_ms"]),
            ("restore", r["restore_calls"], r["restore_received"], r["restore_ms"], r["restore_floor_ms"]),
        ):
            counts = "/".join(f"{calls.get(kind, 0):g}" for kind in ("list", "get", "put", "delete"))
            lines.append(
                f"| {r['size'] // 1000} KB | {op} | {counts} | {moved:,.0f} | {ms:.1f} | {floor:.1f} | "
                f"{ms / floor:.2f} | {_cost(calls) * 1e6:.2f} |"
            )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Measure, print the table, and write it to ``--out`` if given."""
    parser = argparse.ArgumentParser(prog="python -m bench.bench_bucket", description=__doc__)
    parser.add_argument("--rounds", type=int, default=100, help="saves and restores per size (default 100)")
    parser.add_argument("--out", type=Path, help="also write the table (markdown) to this file")
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory(prefix="bench-bucket-") as tmp:
        server = SeaweedServer(Path(tmp) / "seaweedfs")
        server.start()
        try:
            os.environ.update(server.environment())
            bucket = server.make_bucket()
            results = [_measure(f"s3://{bucket}/bench/{size}", size, args.rounds) for size in (1_000, 100_000)]
        finally:
            server.stop()
    table = _table(results)
    footer = f"\n{args.rounds} rounds per size, SeaweedFS 4.48 on loopback, medians; `python -m bench.bench_bucket`"
    print(table + footer)
    if args.out:
        args.out.write_text(table + footer + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
