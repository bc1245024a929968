"""The acknowledgement key: made once, mode 0600, outside every thread; a damaged key is refused, not replaced."""

from __future__ import annotations

import stat
import subprocess
from pathlib import Path

import pytest

from handoff_files import AckKeyError, HandoffError
from handoff_files.foundation.secret import KEY_ENV, ack_key, key_path


def test_the_key_is_made_once_private_and_read_back(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "state" / "ack.key"
    monkeypatch.setenv(KEY_ENV, str(path))
    first = ack_key()
    assert len(first) == 32
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert ack_key() == first
    assert list(path.parent.iterdir()) == [path]  # no temp file left


def test_without_the_variable_the_key_lives_in_the_state_directory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv(KEY_ENV)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path))
    assert key_path() == tmp_path / "handoff-files" / "ack.key"
    monkeypatch.delenv("XDG_STATE_HOME")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert key_path() == tmp_path / ".local" / "state" / "handoff-files" / "ack.key"


def test_processes_making_the_key_at_once_agree_on_one(
    tmp_path: Path, python: str, subprocess_env: dict[str, str]
) -> None:
    subprocess_env[KEY_ENV] = str(tmp_path / "ack.key")
    code = "from handoff_files.foundation.secret import ack_key; print(ack_key().hex())"
    children = [subprocess.Popen([python, "-c", code], env=subprocess_env, stdout=subprocess.PIPE) for _ in range(6)]
    keys = {child.communicate()[0].strip() for child in children}
    assert len(keys) == 1
    assert keys == {(tmp_path / "ack.key").read_text().strip().encode()}


@pytest.mark.parametrize("content", ["", "not hex\n", "abcd\n"])
def test_a_damaged_key_is_refused_naming_the_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, content: str
) -> None:
    path = tmp_path / "ack.key"
    path.write_text(content)
    path.chmod(0o600)
    monkeypatch.setenv(KEY_ENV, str(path))
    with pytest.raises(HandoffError, match="not an acknowledgement key") as caught:
        ack_key()
    assert caught.value.path == str(path)
    assert path.read_text() == content  # never replaced behind the user's back


def test_a_key_that_is_a_link_or_readable_by_others_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    planted = tmp_path / "planted.key"
    planted.write_text("ab" * 32 + "\n")
    planted.chmod(0o600)
    link = tmp_path / "ack.key"
    link.symlink_to(planted)
    monkeypatch.setenv(KEY_ENV, str(link))
    with pytest.raises(AckKeyError, match="plain file, not a link"):
        ack_key()
    monkeypatch.setenv(KEY_ENV, str(planted))
    assert ack_key() == bytes.fromhex("ab" * 32)
    planted.chmod(0o644)
    with pytest.raises(AckKeyError, match="mode 0644"):
        ack_key()
