"""``load(path, cache=True)``: an unchanged file is verified once; any change, and only a change, is read again."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import pytest

from handoff_files import ChecksumMismatchError, HandoffError, HandoffStore, load
from handoff_files.format import loadcache
from handoff_files.format.loadcache import CACHE, LoadCache, identity

SAMPLES = Path(__file__).parents[2] / "samples"


@pytest.fixture(autouse=True)
def _empty_cache() -> None:
    CACHE.clear()


def _saved(folder: Path, narrative: str = "first") -> Path:
    store = HandoffStore(folder)
    store.save({"narrative": narrative, "state": {"data": {"n": 1}}})
    return store.primary


def _age(path: Path) -> None:
    """Make *path* look changed long ago: its times older than the racy window (changes its ctime to now)."""
    past = time.time_ns() - 10 * loadcache.RACY_NS
    os.utime(path, ns=(past, past))


def _decodes(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Count the decodes a load does (the parse, validation and seal check the cache saves)."""
    seen: list[str] = []
    real = loadcache.LoadCache.load

    def counted(self: LoadCache, path: str, **options: object) -> object:
        decode = options.pop("decode")

        def counting(data: bytes, st: os.stat_result) -> object:
            seen.append(path)
            return decode(data, st)  # type: ignore[operator]

        return real(self, path, decode=counting, **options)  # type: ignore[arg-type]

    monkeypatch.setattr(loadcache.LoadCache, "load", counted)
    return seen


def test_an_unchanged_file_is_decoded_once_and_the_same_object_returned(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    primary = _saved(tmp_path / "t")
    decodes = _decodes(monkeypatch)
    first = load(primary, cache=True)
    assert load(primary, cache=True) is first
    assert load(primary, cache=True) is first
    assert decodes == [str(primary)]
    assert first == load(primary)  # the uncached load gives an equal handoff, a new object
    assert load(primary) is not first


@pytest.fixture(params=["racy", "settled"])
def window(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Both kinds of entry: "racy" (bytes kept and compared, as for a file just written) and "settled"
    (identity alone, as for a file written over RACY_NS before: nothing just written can be, so the
    window is set to 0)."""
    if request.param == "settled":
        monkeypatch.setattr(loadcache, "RACY_NS", 0)
    return str(request.param)


def test_a_save_replaces_the_entry(tmp_path: Path, window: str) -> None:
    store = HandoffStore(tmp_path / "t")
    store.save({"narrative": "first"})
    assert load(store.primary, cache=True).narrative == "first"
    store.save({"narrative": "second"})
    assert load(store.primary, cache=True).narrative == "second"


def test_an_edit_in_place_with_the_same_size_and_times_is_seen(tmp_path: Path, window: str) -> None:
    primary = _saved(tmp_path / "t", "aaaa")
    _age(primary)
    before = primary.stat()
    load(primary, cache=True)
    assert (next(iter(CACHE._entries.values())).data is None) == (window == "settled")
    data = primary.read_bytes()
    time.sleep(0.05)  # past the file system clock's tick (4 ms on a coarse-clock kernel), as after any real wait
    # same length, same mtime: only the change time (set by the kernel) differs
    with primary.open("r+b") as handle:
        handle.write(data.replace(b"aaaa", b"bbbb"))
    os.utime(primary, ns=(before.st_atime_ns, before.st_mtime_ns))
    assert primary.stat().st_size == before.st_size
    with pytest.raises(ChecksumMismatchError):
        load(primary, cache=True)  # the edit did not re-seal: refused, not the kept handoff


def test_a_racy_entry_compares_its_bytes(tmp_path: Path) -> None:
    """The same identity with other bytes (a change within one clock tick) is decoded again."""
    primary = _saved(tmp_path / "t", "aaaa")
    kept = load(primary, cache=True)  # just written: racy, its bytes kept
    data = primary.read_bytes()
    entry = next(iter(CACHE._entries.values()))
    assert entry.data == data
    # the file as it would be after a same-tick rewrite: other bytes under the identity kept
    CACHE._entries[next(iter(CACHE._entries))] = loadcache._Entry(entry.identity, kept, data[:-1] + b" ")
    again = load(primary, cache=True)
    assert again is not kept
    assert again == kept  # the file itself is unchanged: decoded again, equal
    assert load(primary, cache=True) is again


def test_a_file_changed_just_now_keeps_its_bytes_whatever_its_mtime(tmp_path: Path) -> None:
    primary = _saved(tmp_path / "t")
    _age(primary)  # an old mtime; the change time is now, and it decides
    load(primary, cache=True)
    entry = next(iter(CACHE._entries.values()))
    assert entry.data == primary.read_bytes()
    assert entry.identity == identity(primary.stat())


def test_the_bytes_go_once_the_window_is_past(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    primary = _saved(tmp_path / "t")
    load(primary, cache=True)
    monkeypatch.setattr(loadcache, "RACY_NS", 0)
    kept = load(primary, cache=True)
    assert next(iter(CACHE._entries.values())).data is None
    assert load(primary, cache=True) is kept


def test_errors_and_migrated_files_are_not_kept(tmp_path: Path) -> None:
    primary = _saved(tmp_path / "t")
    primary.write_bytes(primary.read_bytes().replace(b'"first"', b'"fxrst"'))
    for _ in range(2):
        with pytest.raises(HandoffError):
            load(primary, cache=True)
    assert len(CACHE) == 0
    legacy = next((SAMPLES / "v1.0").glob("*.json"))
    assert load(legacy, cache=True).seal is None  # migrated in memory: unsealed
    assert load(legacy, cache=True) is not load(legacy, cache=True)
    assert len(CACHE) == 0


def test_a_link_swapped_in_is_refused_as_without_the_cache(tmp_path: Path) -> None:
    primary = _saved(tmp_path / "t")
    load(primary, cache=True, follow_symlinks=False)
    other = _saved(tmp_path / "u", "other")
    primary.unlink()
    primary.symlink_to(other)
    with pytest.raises(HandoffError, match="symbolic link"):
        load(primary, cache=True, follow_symlinks=False)
    assert load(primary, cache=True).narrative == "other"  # followed when asked, as an uncached load


def _into(cache: LoadCache, path: Path) -> object:
    return cache.load(
        str(path), limit=10**7, follow_symlinks=True, assume_version=None, decode=lambda _d, _st: load(path)
    )


def test_bounded_by_entries_and_bytes(tmp_path: Path) -> None:
    small = LoadCache(max_entries=2, max_bytes=10**9)
    paths = [_saved(tmp_path / f"t{i}") for i in range(3)]
    first = _into(small, paths[0])
    _into(small, paths[1])
    _into(small, paths[2])
    assert len(small) == 2
    assert _into(small, paths[0]) is not first  # the least recently used went
    tiny = LoadCache(max_entries=10, max_bytes=paths[0].stat().st_size * 2)
    for path in paths:
        _into(tiny, path)
    assert len(tiny) == 2


def test_loads_from_many_threads_while_saving_see_only_saved_generations(tmp_path: Path) -> None:
    store = HandoffStore(tmp_path / "t")
    store.save({"narrative": "0"})
    seen: list[str] = []
    errors: list[BaseException] = []
    done = threading.Event()

    def reader() -> None:
        while not done.is_set():
            try:
                seen.append(load(store.primary, cache=True).narrative)
            except HandoffError as exc:  # a primary read between two renames cannot happen; say so if it does
                errors.append(exc)

    threads = [threading.Thread(target=reader) for _ in range(4)]
    for thread in threads:
        thread.start()
    for n in range(1, 40):
        store.save({"narrative": str(n)})
    done.set()
    for thread in threads:
        thread.join()
    assert errors == []
    assert set(seen) <= {str(n) for n in range(40)}
    assert load(store.primary, cache=True).narrative == "39"
