"""``make demo-bucket``'s job: an agent killed on one "host", its disk thrown away, continues on another."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.storage.conftest import child_env

ROOT = Path(__file__).resolve().parents[2]


def test_the_agent_comes_back_on_another_host_from_the_bucket(bucket_url: str) -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "samples" / "bucket_demo.py"), bucket_url],
        capture_output=True,
        text=True,
        env=child_env() | {"PYTHONPATH": str(ROOT)},
        timeout=180,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    out = done.stdout
    for line in (
        "demo: killing host A's agent with SIGKILL in the middle of its work",
        "host B | RESUMED GEN 3 DONE 3",
        "host B | STEP 4 GEN 4",
        "demo: host B resumed from the bucket and finished: generation 6, 6 steps, each done once",
    ):
        assert line in out, out
    assert "host A | STEP 4" not in out  # killed after step 3: step 4 was host B's
