"""bench/bench_bucket.py runs, and counts the requests docs/scale.md states: a save and a restore on a bucket."""

from __future__ import annotations

from pathlib import Path

from bench.bench_bucket import _measure


def test_a_save_and_a_restore_make_the_requests_docs_scale_states(bucket_url: str, tmp_path: Path) -> None:
    measured = _measure(bucket_url, 1_000, rounds=3)
    # save: LIST (the head: this writer's own last, not read again), the conditional PUT (the commit), LIST
    # after it (keep), a PUT per copy at the etag this writer left it at (no GET: no other writer moved it)
    assert measured["save_calls"] == {"list": 2, "put": 3}
    assert measured["restore_calls"] == {"list": 1, "get": 1}  # one listing, the newest generation
    assert 3_000 < measured["save_sent"] < 7_000  # generation, handoff.json, state.json
    assert measured["save_ms"] > 0
    assert measured["save_floor_ms"] > 0
