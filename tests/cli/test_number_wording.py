"""One wording per number argument, stating its real range, whatever the bad value is.

Runs the CLI as a person's shell does (``python -m handoff_files``, this checkout): each refusal is
a usage error (exit 2) before any thread is read.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.cli.shell import handoff


@pytest.mark.parametrize("value", ["0", "-1", "x", "1.5"])
def test_a_generation_is_refused_in_one_wording(tmp_path: Path, subprocess_env: dict[str, str], value: str) -> None:
    done = handoff("show", tmp_path, "--generation", value, env=subprocess_env)
    assert done.returncode == 2
    assert f"expected a whole number from 1, not {value!r}" in done.stderr, done.stderr


@pytest.mark.parametrize("value", ["x", "-5", "999"])
def test_a_budget_is_refused_stating_its_minimum(tmp_path: Path, subprocess_env: dict[str, str], value: str) -> None:
    done = handoff("brief", tmp_path, "--budget", value, env=subprocess_env)
    assert done.returncode == 2
    assert f"expected a whole number of characters, 1000 or more, not {value!r}" in done.stderr, done.stderr
