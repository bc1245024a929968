"""The rollback anchor's file: each move appends a line, the last whole line counts, a full file is written anew.

A signed save moves the anchor every time, so it is appended to (one ``write``) rather than put in
place anew; what a crash or another writer leaves in it must never read as newer than it is, and a
change by another process must be seen at once, though an unchanged file is not read twice.
"""

from __future__ import annotations

import os
import stat
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from handoff_files import HandoffStore, RollbackError
from handoff_files.foundation.errors import HandoffError
from handoff_files.signing.keys import SigningKey
from handoff_files.thread import anchor as anchor_module
from handoff_files.thread import userrecord
from handoff_files.thread.anchor import anchor_of

pytestmark = pytest.mark.usefixtures("signing_home")


def _saved(tmp_path: Path, key: SigningKey, times: int) -> tuple[Path, Path]:
    folder = tmp_path / "t"
    store = HandoffStore(folder, signing_key=key)
    for n in range(times):
        store.save({"narrative": f"step {n + 1}"})
    (path,) = (tmp_path / "state" / "anchors").iterdir()
    return folder, path


def _line(path: Path, **changes: object) -> bytes:
    """The anchor file's last line with *changes*: what another process of this user would append."""
    last = orjson.loads(path.read_bytes().splitlines()[-1])
    return orjson.dumps({**last, **changes}) + b"\n"


def test_each_signed_save_appends_one_line_to_the_same_file(tmp_path: Path, alice: SigningKey) -> None:
    folder, path = _saved(tmp_path, alice, 1)
    inode = path.stat().st_ino
    HandoffStore(folder, signing_key=alice).save({"narrative": "two"})
    HandoffStore(folder, signing_key=alice).save({"narrative": "three"})
    lines = path.read_bytes().splitlines()
    assert [orjson.loads(line)["generation"] for line in lines] == [1, 2, 3]
    assert path.stat().st_ino == inode  # appended to, not replaced
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    anchor = anchor_of(folder)
    assert anchor is not None
    assert anchor.generation == 3


@pytest.mark.parametrize(
    "torn",
    [b'{"thread_id": "t", "generation": 9', b"\x00\x00\x00\x00", b"not json\n", b'{"generation": 9}\n'],
    ids=["half-written append", "zeros a crash left", "a garbled line", "a line with fields missing"],
)
def test_a_torn_or_garbled_last_line_reads_as_the_line_before_never_newer(
    tmp_path: Path, alice: SigningKey, torn: bytes
) -> None:
    folder, path = _saved(tmp_path, alice, 2)
    with path.open("ab") as handle:
        handle.write(torn)
    anchor = anchor_of(folder)
    assert anchor is not None
    assert anchor.generation == 2
    assert HandoffStore(folder).restore().handoff.generation == 2  # no false alarm
    HandoffStore(folder, signing_key=alice).save({"narrative": "three"})
    assert anchor_of(folder) == anchor_of(folder)
    assert anchor_of(folder).generation == 3  # type: ignore[union-attr]


def test_a_line_another_process_appends_is_seen_at_once(tmp_path: Path, alice: SigningKey) -> None:
    """The anchor is kept by the file's identity: another writer's append changes it, so it is read again."""
    folder, path = _saved(tmp_path, alice, 2)
    assert HandoffStore(folder).restore().handoff.generation == 2  # read, and remembered
    assert anchor_of(folder) is anchor_of(folder)  # unchanged: not read again
    with path.open("ab") as handle:  # this user's other process saved generation 7 (since removed)
        handle.write(_line(path, generation=7, seal="blake3:" + "7" * 64))
    anchor = anchor_of(folder)
    assert anchor is not None
    assert anchor.generation == 7
    with pytest.raises(RollbackError, match="you saved or restored generation 7"):
        HandoffStore(folder).restore()


def test_an_anchor_file_past_its_size_is_written_anew_with_one_line(tmp_path: Path, alice: SigningKey) -> None:
    folder, path = _saved(tmp_path, alice, 1)
    old = _line(path)
    with path.open("ab") as handle:
        handle.write(old * (4096 // len(old) + 1))
    assert path.stat().st_size > 4096
    inode = path.stat().st_ino
    HandoffStore(folder, signing_key=alice).save({"narrative": "two"})
    lines = path.read_bytes().splitlines()
    assert [orjson.loads(line)["generation"] for line in lines] == [2]
    assert stat.S_IMODE(path.stat().st_mode) == 0o600
    assert path.stat().st_ino != inode


def test_an_anchor_file_made_open_to_others_is_refused_though_it_was_read_before(
    tmp_path: Path, alice: SigningKey
) -> None:
    folder, path = _saved(tmp_path, alice, 1)
    assert anchor_of(folder) is not None  # read and remembered
    path.chmod(0o666)
    with pytest.raises(HandoffError, match="no one else can write"):
        anchor_of(folder)


def test_an_anchor_replaced_by_a_link_is_not_appended_through(tmp_path: Path, alice: SigningKey) -> None:
    folder, path = _saved(tmp_path, alice, 1)
    elsewhere = tmp_path / "elsewhere.json"
    elsewhere.write_bytes(path.read_bytes())
    elsewhere.chmod(0o600)
    path.unlink()
    path.symlink_to(elsewhere)
    before = elsewhere.read_bytes()
    receipt = HandoffStore(folder, signing_key=alice).save({"narrative": "two"})
    assert elsewhere.read_bytes() == before  # never read or written through the link
    assert [p for p in receipt.problems if p.startswith("the rollback anchor could not be moved on")]
    assert any(p.startswith("no rollback check: ") for p in HandoffStore(folder).restore().problems)


def test_a_save_knows_the_anchor_it_appended_and_does_not_read_it_back(
    tmp_path: Path, alice: SigningKey, monkeypatch: pytest.MonkeyPatch
) -> None:
    folder, _ = _saved(tmp_path, alice, 2)  # the file exists: the next saves append
    store = HandoffStore(folder, signing_key=alice)
    store.save({"narrative": "three"})
    reads: list[Path] = []
    real = userrecord.read_private_stat

    def counted(path: Path, *args: object) -> object:
        reads.append(path)
        return real(path, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(anchor_module, "read_private_stat", counted)
    store.save({"narrative": "four"})
    assert anchor_of(folder).generation == 4  # type: ignore[union-attr]
    assert reads == []  # each save appended and remembered what it wrote


_RACER = """
import os, sys
from pathlib import Path
from handoff_files.thread import anchor
anchor._COMPACT = 400  # written anew every few moves: appends race the renames too
folder, start = Path(sys.argv[1]), int(sys.argv[2])
for generation in range(start, start + 400, 4):
    anchor.advance(folder, "t", generation, f"blake3:{generation:064x}", first_seal="blake3:" + "1" * 64)
"""


def test_processes_racing_to_move_one_anchor_never_leave_an_older_one_last(tmp_path: Path) -> None:
    """Four processes move one folder's anchor up, interleaved (1, 2, 3, 4, 5 …): the newest survives.

    Without the anchors folder's lock a move decided on a stale read, or appended to a file another
    process had just replaced, left an older generation last (seen within a few runs of this test).
    """
    folder = tmp_path / "t"
    folder.mkdir()
    racers = [  # this test's state folder, through the environment signing_home set
        subprocess.Popen([sys.executable, "-c", _RACER, str(folder), str(start)], env=dict(os.environ))
        for start in (1, 2, 3, 4)
    ]
    assert [racer.wait(timeout=120) for racer in racers] == [0, 0, 0, 0]
    anchor = anchor_of(folder)
    assert anchor is not None
    assert anchor.generation == 400
