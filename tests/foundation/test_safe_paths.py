"""Folders under a root: made 0700 and opened one by one from the root, a planted link refused, never followed."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from handoff_files import HandoffValidationError, InvalidNameError
from handoff_files.foundation.safe_paths import dir_under, open_dir_under


def test_missing_folders_are_made_private_and_the_descriptor_is_the_folder(tmp_path: Path) -> None:
    root = tmp_path / "root"
    target = root / "a" / "b"
    assert not dir_under(root, target), "a missing folder is reported, not made, without create"
    assert not root.exists()
    with open_dir_under(root, target, create=True) as fd:
        assert fd is not None
        assert os.fstat(fd).st_ino == target.stat().st_ino
    for folder in (root / "a", target):
        assert folder.stat().st_mode & 0o777 == 0o700
    assert dir_under(root, target)
    assert dir_under(root, root), "the root itself"


def test_the_root_may_be_a_link_the_caller_named(tmp_path: Path) -> None:
    real = tmp_path / "real"
    real.mkdir()
    (tmp_path / "named").symlink_to(real)
    assert dir_under(tmp_path / "named", tmp_path / "named" / "a", create=True)
    assert (real / "a").is_dir()


@pytest.mark.parametrize("depth", [1, 2, 3], ids=["first folder", "middle folder", "last folder"])
@pytest.mark.parametrize("create", [False, True], ids=["reading", "writing"])
def test_a_link_anywhere_below_the_root_is_refused_naming_it(tmp_path: Path, depth: int, create: bool) -> None:
    root, outside = tmp_path / "root", tmp_path / "outside"
    outside.mkdir()
    parts = ["a", "b", "c"]
    link = root.joinpath(*parts[:depth])
    link.parent.mkdir(parents=True, exist_ok=True)
    link.symlink_to(outside)
    with pytest.raises(InvalidNameError, match="is a symbolic link") as refused:
        dir_under(root, root.joinpath(*parts), create=create)
    assert refused.value.path == str(link)
    assert list(outside.iterdir()) == [], "nothing was made through the link"


def test_a_file_in_a_folders_place_and_a_path_outside_the_root_are_refused(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(HandoffValidationError, match="not a folder"):
        dir_under(tmp_path, tmp_path / "file" / "below", create=True)
    with pytest.raises(InvalidNameError, match="not under the root"):
        dir_under(tmp_path / "root", tmp_path / "elsewhere")
    with pytest.raises(InvalidNameError, match="would leave the root"):
        dir_under(tmp_path / "root", tmp_path / "root" / ".." / "elsewhere")
