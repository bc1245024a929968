"""A save's receipt line names only what was written: an unfinished save (exit 3) never claims the primary."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Final

import pytest

from handoff_files import HandoffStore

# `handoff ARGS` with every write of the thread's primary failing after the commit point (a full disk
# under the primary, say): the generation is committed in history/, the primary is left as it was
_PRIMARY_FAILS: Final = """
import sys
from pathlib import Path
from handoff_files.cli.main import main
from handoff_files.foundation.errors import HandoffWriteError
from handoff_files.thread import commit

written = commit.write_durable

def failing(path, data, **options):
    if Path(path).name == "handoff.json":
        raise HandoffWriteError(path, "write failed, the previous file is unchanged: No space left on device")
    return written(path, data, **options)

commit.write_durable = failing
sys.exit(main(sys.argv[1:]))
"""


@pytest.mark.parametrize("json_output", [pytest.param(False, id="text"), pytest.param(True, id="json")])
def test_an_unfinished_save_names_its_thread_and_never_says_it_wrote_the_primary(
    tmp_path: Path, subprocess_env: dict[str, str], json_output: bool
) -> None:
    thread = tmp_path / "t1"
    HandoffStore(thread).save({"narrative": "first."})
    primary = thread / "handoff.json"
    before = primary.read_bytes()
    content = tmp_path / "c.json"
    content.write_text('{"narrative": "second."}', encoding="utf-8")
    argv = ["save", str(thread), str(content), *(["--json"] if json_output else [])]
    done = subprocess.run(
        [sys.executable, "-c", _PRIMARY_FAILS, *argv],
        capture_output=True,
        text=True,
        env=subprocess_env,
        check=False,
        timeout=60,
    )
    assert done.returncode == 3, done.stderr
    assert primary.read_bytes() == before, "the primary was not written"
    assert "left unfinished" in done.stderr
    assert f"{primary}: write failed" in done.stderr
    if json_output:
        assert json.loads(done.stdout)["unfinished"]
        return
    assert f"to {primary}" not in done.stdout, done.stdout
    assert done.stdout.startswith(f"saved generation 2 in {thread} (blake3:")
    assert "committed, but not every copy was written (said above)" in done.stdout
