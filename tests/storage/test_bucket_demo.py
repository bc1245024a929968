"""``make demo-bucket``'s job: an agent killed on one "host", its disk thrown away, continues on another."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from tests.storage.conftest import child_env
from tests.test_readme import BUCKET, README, block

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


def test_the_readmes_bucket_example_runs_against_the_real_store(bucket_url: str) -> None:
    """README.md's object-storage example as written, its bucket swapped for this test's (credentials: the env)."""
    found = block(BUCKET)
    code = "\n" * (found.line - 1) + found.text.replace("s3://team-bucket/agents/importer-fix", bucket_url)
    namespace: dict[str, object] = {}
    exec(compile(code, str(README), "exec"), namespace)  # noqa: S102 -- running the README's example is the test
    restored = namespace["restored"]
    assert getattr(restored, "generation", None) == 1
    assert getattr(restored, "where", "") == f"{bucket_url}/history/00000001.json"
