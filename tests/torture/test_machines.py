"""The torture's cross-machine parts run small: writers sharing nothing but a folder or a bucket, killed mid-save.

The bucket part starts a SeaweedFS server of its own (it kills it mid-run, so not the suite's
shared one) and restarts it once here (a restart takes SeaweedFS ~15 s); ``make torture`` runs
both parts at 2,000 acknowledged saves, the store killed twice.
"""

from __future__ import annotations

import random
from pathlib import Path

from bench.torture import Options, Row
from bench.torture.machines import _check, _Run, run_bucket, run_folder
from bench.torture.machines_child import AGENT, THREAD, content
from handoff_files import HandoffStore


def _options(tmp_path: Path, count: int) -> Options:
    return Options(count=count, seed=random.randrange(1 << 32), workdir=tmp_path, progress=lambda _: None)


def test_writers_sharing_only_a_folder_lose_nothing(tmp_path: Path) -> None:
    row = run_folder(_options(tmp_path, 60))
    assert row.ok, row.failures
    assert row.cases >= 60
    assert row.kills >= 2


def test_writers_sharing_only_a_bucket_lose_nothing_when_they_and_the_store_are_killed(tmp_path: Path) -> None:
    row = run_bucket(_options(tmp_path, 24), server_kills=1)
    assert row.ok, row.failures
    assert row.cases >= 24
    assert row.kills >= 3  # writers, and the store once
    assert "SeaweedFS killed and restarted 1 time(s)" in row.notes


def test_the_checks_catch_a_lost_a_reused_and_a_foreign_answer(tmp_path: Path) -> None:
    thread = tmp_path / "thread"
    store = HandoffStore(thread, thread_id=THREAD, agent_id=AGENT, keep=100)
    receipts = [store.save(content(0, step)) for step in range(3)]
    run = _Run(str(thread), {}, _options(tmp_path, 3), Row("check"))
    run.acks = [(0, step, r.generation, r.checksum) for step, r in enumerate(receipts)]
    _check(run, str(thread), bucket=False)
    assert run.row.ok, run.row.failures
    run = _Run(str(thread), {}, _options(tmp_path, 3), Row("check"))
    run.acks = [(0, 0, 1, receipts[0].checksum), (1, 0, 1, receipts[1].checksum), (0, 9, 7, receipts[2].checksum)]
    run.bad = ["reader 0: generation 2 after 3: went back"]
    _check(run, str(thread), bucket=False)
    assert run.row.lost == 2  # generation 1 with another seal, and generation 7 never written
    assert run.row.torn == 2  # generation 1 acknowledged twice, and the reader's wrong answer
