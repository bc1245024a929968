"""A graph on a bucket SIGKILLed at random moments mid-run and resumed: it finishes, and every checkpoint's
channels agree.

The kills land anywhere in a step (its put, its writes). This did not reproduce the newcomer's run
that resumed a step short from part of a task's writes (that needed a wider graph and more kills):
tests/storage/test_bucket_saver.py's reader test is the regression test for it (a task's writes are
seen all or none); this one is the general check that a killed run on a bucket resumes whole.
"""

from __future__ import annotations

import os
import random
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from handoff_files.langgraph import HandoffSaver
from handoff_files.storage import BucketStorage
from tests.langgraph.wide_agent import CHANNELS, STEPS

ROOT = Path(__file__).resolve().parents[2]
KILLS = 12


@pytest.mark.slow
def test_a_graph_on_a_bucket_killed_at_random_resumes_whole(bucket_url: str) -> None:
    rng = random.Random(20261206)  # kill timing, not secrets
    env = dict(os.environ) | {"PYTHONPATH": str(ROOT)}
    argv = [sys.executable, "-m", "tests.langgraph.wide_agent", bucket_url, "wide"]
    storage = BucketStorage(bucket_url)
    for _ in range(KILLS):
        before = len(storage.list("wide/"))
        agent = subprocess.Popen(argv, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        deadline = time.monotonic() + 60
        while len(storage.list("wide/")) <= before and agent.poll() is None and time.monotonic() < deadline:
            time.sleep(0.01)  # until it is under way: LangGraph takes a second or two to load
        time.sleep(rng.uniform(0, 0.2))  # then anywhere in a step: its put, or its writes
        agent.send_signal(signal.SIGKILL)
        agent.communicate(timeout=60)
    finished = subprocess.run(argv, env=env, capture_output=True, text=True, timeout=300, check=False)
    assert finished.returncode == 0, finished.stderr
    saver = HandoffSaver(bucket_url)
    history = list(saver.list({"configurable": {"thread_id": "wide"}}))
    newest = history[0].checkpoint["channel_values"]
    assert newest["count"] == STEPS
    for item in history:
        values = item.checkpoint["channel_values"]
        if "count" in values:
            assert {values.get(name) for name in CHANNELS} == {values["count"]}, values
