"""Request files are sealed: a checksum over their canonical JSON, made on every write and verified on every read."""

from __future__ import annotations

import datetime as dt
import json
import logging
from collections.abc import Callable
from pathlib import Path

import pytest

from handoff_files.format import seal as sealing
from handoff_files.foundation.errors import HandoffError, HandoffValidationError, SealError
from handoff_files.inbox.lifecycle import HandoffInbox
from handoff_files.inbox.status import HandoffStatus
from tests.inbox.clock import Clock


@pytest.fixture
def clock() -> Clock:
    """The inbox's clock, which the expiry case moves past a request's timeout."""
    return Clock()


@pytest.fixture
def inbox(tmp_path: Path, clock: Clock) -> HandoffInbox:
    """An empty inbox on a clock the test moves."""
    return HandoffInbox(tmp_path / "inbox", clock=clock)


def _file(inbox: HandoffInbox, handoff_id: str) -> Path:
    return inbox.requests_dir / f"{handoff_id}.json"


def _assert_sealed(path: Path) -> None:
    """The file carries a blake3 seal over its canonical JSON without the seal."""
    document = json.loads(path.read_bytes())
    assert document["seal"]["algorithm"] == "blake3"
    assert document["seal"]["digest"] == sealing.digest(sealing.canonical(document), "blake3")


def test_a_new_request_file_carries_a_seal_over_its_canonical_content(inbox: HandoffInbox) -> None:
    handoff_id = inbox.request_handoff("alpha", "beta", "gen 2 needs SQL", metadata={"n": [1, 2.5]}).handoff_id
    _assert_sealed(_file(inbox, handoff_id))
    record = inbox.get_handoff(handoff_id)
    assert record is not None
    assert (record.reason, record.metadata) == ("gen 2 needs SQL", {"n": [1, 2.5]})


def test_one_flipped_bit_in_a_value_is_refused_as_damage_naming_the_file(
    inbox: HandoffInbox, caplog: pytest.LogCaptureFixture
) -> None:
    """'gen 2 needs SQL' read as 'gen 3 needs SQL' is still a valid request: only the seal tells it apart."""
    good = inbox.request_handoff("alpha", "beta", "fine").handoff_id
    bad = inbox.request_handoff("alpha", "beta", "gen 2 needs SQL").handoff_id
    path = _file(inbox, bad)
    data = path.read_bytes()
    flipped = data.replace(b"gen 2", bytes([*b"gen ", ord("2") ^ 1]))
    assert flipped != data
    path.write_bytes(flipped)
    with pytest.raises(SealError, match="damaged or edited") as caught:
        inbox.get_handoff(bad)
    assert caught.value.path == str(path)
    assert str(path) in str(caught.value)
    with caplog.at_level(logging.WARNING, logger="handoff_files.inbox.lifecycle"):
        assert [r.handoff_id for r in inbox.list_handoffs()] == [good]
    assert [(type(p), p.path) for p in inbox.problems] == [(SealError, str(path))]
    with pytest.raises(SealError):
        inbox.accept_handoff(bad)
    assert path.read_bytes() == flipped  # a refused change writes nothing


@pytest.mark.parametrize(
    "seal",
    [
        pytest.param({"algorithm": "blake3", "digest": "0" * 64}, id="another-digest"),
        pytest.param({"algorithm": "md5", "digest": "0" * 64}, id="unknown-algorithm"),
        pytest.param({"algorithm": "blake3", "digest": "not hex"}, id="digest-not-hex"),
        pytest.param({"algorithm": "blake3"}, id="no-digest"),
        pytest.param("blake3:00", id="not-an-object"),
        pytest.param(None, id="null"),
    ],
)
def test_a_seal_that_is_wrong_or_malformed_is_refused_as_damage(inbox: HandoffInbox, seal: object) -> None:
    handoff_id = inbox.request_handoff("alpha", "beta", "x").handoff_id
    path = _file(inbox, handoff_id)
    path.write_text(json.dumps({**json.loads(path.read_bytes()), "seal": seal}, indent=2))
    with pytest.raises(SealError, match="damaged or edited") as caught:
        inbox.get_handoff(handoff_id)
    assert caught.value.path == str(path)


def _accept(inbox: HandoffInbox, handoff_id: str, _clock: Clock) -> None:
    inbox.accept_handoff(handoff_id)


def _reject(inbox: HandoffInbox, handoff_id: str, _clock: Clock) -> None:
    inbox.reject_handoff(handoff_id, "no capacity")


def _complete(inbox: HandoffInbox, handoff_id: str, _clock: Clock) -> None:
    inbox.accept_handoff(handoff_id)
    inbox.complete_handoff(handoff_id)


def _expire(inbox: HandoffInbox, handoff_id: str, clock: Clock) -> None:
    clock.now += dt.timedelta(seconds=61)
    assert [r.handoff_id for r in inbox.expire_overdue()] == [handoff_id]


def _expire_on_touch(inbox: HandoffInbox, handoff_id: str, clock: Clock) -> None:
    clock.now += dt.timedelta(seconds=61)
    with pytest.raises(HandoffError, match="EXPIRED"):
        inbox.accept_handoff(handoff_id)  # the refused accept records the expiry


@pytest.mark.parametrize(
    ("change", "status"),
    [
        pytest.param(_accept, HandoffStatus.ACCEPTED, id="accept"),
        pytest.param(_reject, HandoffStatus.REJECTED, id="reject"),
        pytest.param(_complete, HandoffStatus.COMPLETED, id="complete"),
        pytest.param(_expire, HandoffStatus.EXPIRED, id="expire-overdue"),
        pytest.param(_expire_on_touch, HandoffStatus.EXPIRED, id="expired-on-touch"),
    ],
)
def test_every_change_the_lifecycle_makes_re_seals_the_file(
    inbox: HandoffInbox, clock: Clock, change: Callable[[HandoffInbox, str, Clock], None], status: HandoffStatus
) -> None:
    handoff_id = inbox.request_handoff("alpha", "beta", "x", timeout=60).handoff_id
    path = _file(inbox, handoff_id)
    before = path.read_bytes()
    change(inbox, handoff_id, clock)
    assert path.read_bytes() != before
    assert json.loads(path.read_bytes())["status"] == status.value  # the file says so, not only the read
    _assert_sealed(path)
    assert inbox.get_handoff_status(handoff_id) is status


# -- request files written before they were sealed --------------------------------------------------


def _legacy(inbox: HandoffInbox, reason: str = "written by an older release") -> tuple[str, Path]:
    """A request file in the form releases before the seal wrote: the same JSON with no ``seal`` key."""
    handoff_id = inbox.request_handoff("alpha", "beta", reason).handoff_id
    path = _file(inbox, handoff_id)
    document = json.loads(path.read_bytes())
    del document["seal"]
    path.write_text(json.dumps(document, indent=2) + "\n")
    return handoff_id, path


def test_a_request_file_from_before_the_seal_reads_as_before_with_a_warning_once(
    inbox: HandoffInbox, caplog: pytest.LogCaptureFixture
) -> None:
    handoff_id, path = _legacy(inbox)
    with caplog.at_level(logging.WARNING, logger="handoff_files.inbox"):
        record = inbox.get_handoff(handoff_id)
        assert [r.handoff_id for r in inbox.list_handoffs()] == [handoff_id]
        inbox.list_handoffs()
    assert record is not None
    assert (record.reason, record.status) == ("written by an older release", HandoffStatus.PENDING)
    assert inbox.problems == ()  # read, not skipped
    warned = [r.getMessage() for r in caplog.records if str(path) in r.getMessage()]
    assert len(warned) == 1, caplog.records  # once per file, not per read
    assert "no seal" in warned[0]


def test_the_first_change_to_a_request_file_from_before_the_seal_seals_it(inbox: HandoffInbox) -> None:
    handoff_id, path = _legacy(inbox)
    inbox.accept_handoff(handoff_id)
    _assert_sealed(path)
    assert inbox.get_handoff_status(handoff_id) is HandoffStatus.ACCEPTED


def test_a_file_from_before_the_seal_is_still_validated_strictly(inbox: HandoffInbox) -> None:
    """No seal is no licence: an unsealed file with a bad value or an unknown key is refused as before."""
    handoff_id, path = _legacy(inbox)
    document = json.loads(path.read_bytes())
    path.write_text(json.dumps({**document, "sael": {"algorithm": "blake3"}}, indent=2))
    with pytest.raises(HandoffValidationError, match="sael"):
        inbox.get_handoff(handoff_id)
