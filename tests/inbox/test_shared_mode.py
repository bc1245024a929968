"""The inbox's group-shared mode: what it creates is 2770/0660 whatever the umask; the default stays private."""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest

from handoff_files.cli.main import main
from handoff_files.foundation.errors import HandoffError
from handoff_files.inbox.lifecycle import HandoffInbox


@pytest.fixture
def strict_umask() -> Iterator[None]:
    # a 077 umask would narrow 0660 to 0600: shared mode must set its modes explicitly
    old = os.umask(0o077)
    try:
        yield
    finally:
        os.umask(old)


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.mark.usefixtures("strict_umask")
def test_shared_inbox_creates_setgid_group_folders_and_group_files(tmp_path: Path) -> None:
    inbox = HandoffInbox(tmp_path / "inbox", shared=True)
    record = inbox.request_handoff("alice", "bob", "take over")
    inbox.accept_handoff(record.handoff_id)  # a rewrite makes a new file: it must be shared too
    assert _mode(inbox.path) == 0o2770
    assert _mode(inbox.requests_dir) == 0o2770
    assert inbox.path.stat().st_mode & stat.S_ISGID
    assert _mode(inbox.path / ".lock") == 0o660
    assert _mode(inbox.requests_dir / f"{record.handoff_id}.json") == 0o660


@pytest.mark.usefixtures("strict_umask")
def test_default_inbox_stays_private(tmp_path: Path) -> None:
    inbox = HandoffInbox(tmp_path / "inbox")
    record = inbox.request_handoff("alice", "bob", "take over")
    assert _mode(inbox.path) == 0o700
    assert _mode(inbox.requests_dir) == 0o700
    assert _mode(inbox.path / ".lock") == 0o600
    assert _mode(inbox.requests_dir / f"{record.handoff_id}.json") == 0o600


def test_shared_inbox_refuses_an_existing_private_folder_naming_the_chmod(tmp_path: Path) -> None:
    HandoffInbox(tmp_path / "inbox").request_handoff("alice", "bob", "private first")
    shared = HandoffInbox(tmp_path / "inbox", shared=True)
    with pytest.raises(HandoffError, match=r"chmod 2770 .*inbox") as caught:
        shared.request_handoff("alice", "bob", "now shared")
    assert caught.value.path == os.fspath(tmp_path / "inbox")
    assert _mode(tmp_path / "inbox") == 0o700  # never widened silently


@pytest.mark.usefixtures("strict_umask")
def test_shared_inbox_accepts_a_folder_chmodded_as_advised(tmp_path: Path) -> None:
    private = HandoffInbox(tmp_path / "inbox")
    private.ensure()
    for path in (private.path, private.requests_dir):
        path.chmod(0o2770)
    (private.path / ".lock").chmod(0o660)
    shared = HandoffInbox(tmp_path / "inbox", shared=True)
    record = shared.request_handoff("alice", "bob", "now shared")
    assert _mode(shared.requests_dir / f"{record.handoff_id}.json") == 0o660


@pytest.mark.usefixtures("strict_umask")
def test_cli_shared_flag_before_or_after_the_action(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    inbox = tmp_path / "inbox"
    assert main(["inbox", str(inbox), "--shared", "request", "--from", "alice", "--to", "bob", "--reason", "r"]) == 0
    assert _mode(inbox) == 0o2770
    assert main(["inbox", str(inbox), "list", "--shared"]) == 0
    capsys.readouterr()
    assert main(["inbox", str(tmp_path / "private"), "request", "--from", "a", "--to", "b", "--reason", "r"]) == 0
    assert _mode(tmp_path / "private") == 0o700
    assert main(["inbox", str(tmp_path / "private"), "--shared", "list"]) == 0  # reads create nothing: no check
    argv = ["inbox", str(tmp_path / "private"), "request", "--from", "a", "--to", "b", "--reason", "r", "--shared"]
    assert main(argv) == 1
    assert "chmod 2770" in capsys.readouterr().err
