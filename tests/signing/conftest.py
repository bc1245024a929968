"""Keys for the signing tests, and OpenSSH's ssh-keygen: the other implementation each signature must agree with."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

from handoff_files.signing.keys import SigningKey, create_key

SSH_KEYGEN = shutil.which("ssh-keygen")
needs_ssh_keygen = pytest.mark.skipif(SSH_KEYGEN is None, reason="OpenSSH's ssh-keygen is not installed")


def ssh_keygen(*args: str, stdin: bytes | None = None, cwd: Path | None = None) -> subprocess.CompletedProcess[bytes]:
    """Run ``ssh-keygen`` with *args* (never asking anything: no terminal, standard input given)."""
    assert SSH_KEYGEN is not None
    return subprocess.run(
        [SSH_KEYGEN, *args], input=stdin or b"", capture_output=True, cwd=cwd, check=False, timeout=60
    )


@pytest.fixture
def key(tmp_path: Path) -> SigningKey:
    """A new Ed25519 key, made by the library (tmp_path/keys/agent and agent.pub)."""
    return create_key(tmp_path / "keys" / "agent", comment="agent@test")


@pytest.fixture
def openssh_key(tmp_path: Path) -> Path:
    """A new Ed25519 key, made by ssh-keygen (unencrypted, as `ssh-keygen -N ""` writes it)."""
    path = tmp_path / "ssh" / "id_ed25519"
    path.parent.mkdir(mode=0o700)
    done = ssh_keygen("-q", "-t", "ed25519", "-N", "", "-C", "person@laptop", "-f", str(path))
    assert done.returncode == 0, done.stderr
    return path
