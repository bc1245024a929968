"""Shared fixtures and hypothesis profiles."""

from __future__ import annotations

import os
import sys
from pathlib import Path
from typing import Final

import pytest
from hypothesis import HealthCheck, settings

from handoff_files.signing.keys import SigningKey, allowed_signers_line, create_key

#: SeaweedFS, the real object store, for any suite that asks for it (seaweedfs, aws_env, test_bucket, bucket_url)
pytest_plugins = ["tests.objectstore"]

# dev: quick local runs; ci: more examples, no deadline (shared, noisy machines)
settings.register_profile("dev", max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("ci", max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "dev"))

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture(autouse=True, scope="session")
def _ack_key(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Acknowledgement codes come from a key made for this run, never the user's own (children inherit it)."""
    os.environ["HANDOFF_FILES_KEY"] = str(tmp_path_factory.mktemp("ack-key") / "ack.key")


@pytest.fixture(autouse=True, scope="session")
def _no_user_configuration(tmp_path_factory: pytest.TempPathFactory) -> None:
    """The user's own configuration (a signing key, allowed_signers) never signs or judges a test's saves."""
    os.environ["XDG_CONFIG_HOME"] = str(tmp_path_factory.mktemp("config-home"))
    for name in ("HANDOFF_FILES_SIGNING_KEY", "HANDOFF_FILES_ALLOWED_SIGNERS"):
        os.environ.pop(name, None)


@pytest.fixture
def thread_dir(tmp_path: Path) -> Path:
    """A fresh, not yet created thread directory with a valid name (the store takes ids from it)."""
    return tmp_path / "thread-1"


@pytest.fixture
def subprocess_env() -> dict[str, str]:
    """Environment for child Python processes: they import this checkout, not an installed copy."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ROOT), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env["PYTHONUNBUFFERED"] = "1"
    return env


@pytest.fixture
def python() -> str:
    """The interpreter running the tests, for child processes."""
    return sys.executable


#: The principal :func:`alice` is trusted as.
ALICE: Final = "alice@example.com"


@pytest.fixture
def signing_home(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """This test's own configuration and state folders (tmp_path/config, tmp_path/state): no key,
    allowed_signers or pin of another test or of the user. Returns the configuration folder."""
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "config"))
    monkeypatch.setenv("HANDOFF_FILES_KEY", str(tmp_path / "state" / "ack.key"))
    monkeypatch.delenv("HANDOFF_FILES_SIGNING_KEY", raising=False)
    monkeypatch.delenv("HANDOFF_FILES_ALLOWED_SIGNERS", raising=False)
    return tmp_path / "config" / "handoff-files"


@pytest.fixture
def alice(signing_home: Path, tmp_path: Path) -> SigningKey:
    """A new key that this test's allowed_signers trusts as :data:`ALICE`."""
    key = create_key(tmp_path / "alice")
    signing_home.mkdir(parents=True, exist_ok=True)
    (signing_home / "allowed_signers").write_text(allowed_signers_line(key, ALICE) + "\n", encoding="utf-8")
    return key
