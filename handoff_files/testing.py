"""The pytest plugin: the ``handoff_killer`` fixture, which kills and restarts an agent built on handoff-files."""

from __future__ import annotations

import random
from collections.abc import Generator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

if TYPE_CHECKING:
    from pluggy import Result

    from handoff_files.run.killrun import Killer

# loaded into every pytest session where handoff-files is installed: import nothing heavy here
_SEED = pytest.StashKey[int]()


def pytest_addoption(parser: pytest.Parser) -> None:
    """Register ``--handoff-seed``, which replays a failed run's kill plans."""
    parser.getgroup("handoff-files").addoption(
        "--handoff-seed",
        type=int,
        default=None,
        metavar="SEED",
        help="seed handoff_killer's kill plans (default: a fresh seed per test, shown when the test fails)",
    )


@pytest.fixture
def handoff_killer(request: pytest.FixtureRequest, tmp_path: Path) -> Killer:
    """Run an agent command under kills and restarts: ``handoff_killer.run(argv, kills=25)``.

    Each run gets a fresh thread directory under the test's ``tmp_path``; the seed that drew the
    kill plans is printed with a failing test's report, and ``--handoff-seed`` draws them again.
    """
    from handoff_files.run.killrun import Killer  # noqa: PLC0415 -- on use: most sessions never ask for it

    seed = request.config.getoption("handoff_seed")
    if seed is None:
        seed = random.SystemRandom().randrange(1 << 32)
    request.node.stash[_SEED] = seed
    return Killer(tmp_path / "handoff-kills", seed=seed)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item) -> Generator[None, Result[pytest.TestReport], None]:
    """Add the seed to a failed report of a test that used ``handoff_killer``, so the run can be replayed."""
    outcome = yield
    report = outcome.get_result()
    seed = item.stash.get(_SEED, None)
    if seed is not None and report.failed:
        report.sections.append(
            ("handoff_killer", f"kill plans drawn with seed {seed}: rerun with --handoff-seed={seed}")
        )
