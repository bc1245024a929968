"""The wheel is the product: it holds every file of the package tree, a new folder needs no listing, and installed
into a fresh venv outside the source tree it migrates 0.8 and 1.0 samples.

(`.ci/installed` goes further in CI: every command, every module and one real flow from the installed wheel.)
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
import zipfile
from pathlib import Path

import pytest

from tests.conftest import ROOT

CHECK = textwrap.dedent(
    """
    import importlib.resources, json, sys
    import handoff_files
    from handoff_files import load
    from handoff_files.format.versions import steps

    assert "site-packages" in handoff_files.__file__, handoff_files.__file__
    folder = importlib.resources.files("handoff_files.schemas")
    schemas = sorted(p.name for p in folder.iterdir() if p.name.endswith(".json"))
    out = {"schemas": schemas, "steps": sorted(steps())}
    for name in sys.argv[1:]:
        handoff = load(name)
        out[name] = [handoff.schema_version, handoff.lineage.migrated_from.schema_version, handoff.narrative[:20]]
    print(json.dumps(out))
    """
)
# where each folder of the source tree lands in the wheel
SHIPPED: dict[str, str] = {
    "handoff_files": "handoff_files",
    "migrations": "handoff_files/migrations",
    "schemas": "handoff_files/schemas",
}
# what setuptools prints when it warns (a deprecation, a folder left out of `packages` …)
WARNING_MARKS = ("Warning:", "!!", "absent from the `packages`")


def _env() -> dict[str, str]:
    return {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}


def build_wheel(tree: Path, dist: Path) -> tuple[Path, str]:
    """Build the wheel of *tree* as pip does for a user (isolated build); return it and the build's output."""
    done = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "-v", "--no-deps", "-w", str(dist), str(tree)],
        capture_output=True,
        text=True,
        env=_env(),
        cwd=dist.parent,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    (wheel,) = dist.glob("handoff_files-*.whl")
    return wheel, done.stdout + done.stderr


def source_files(tree: Path) -> set[str]:
    """Every file of the package tree as the wheel should hold it (caches and temp files aside)."""
    found = set()
    for folder, target in SHIPPED.items():
        for path in (tree / folder).rglob("*"):
            if path.is_file() and "__pycache__" not in path.parts and path.suffix in (".py", ".json", ".typed"):
                found.add(f"{target}/{path.relative_to(tree / folder).as_posix()}")
    return found


def wheel_files(wheel: Path) -> set[str]:
    with zipfile.ZipFile(wheel) as archive:
        return {name for name in archive.namelist() if name.startswith("handoff_files/")}


def copy_tree(destination: Path) -> Path:
    """A copy of the source tree as a clone has it: tracked files only (no venv, no caches)."""
    listed = subprocess.run(
        ["git", "-C", str(ROOT), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],  # noqa: S607
        capture_output=True,
        check=True,
    ).stdout.decode()
    for name in filter(None, listed.split("\0")):
        source = ROOT / name
        if source.is_file():
            (destination / name).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(source, destination / name)
    return destination


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str]:
    """The wheel of this tree, built once for the module's tests."""
    dist = tmp_path_factory.mktemp("dist")
    return build_wheel(ROOT, dist)


def test_the_wheel_holds_every_file_of_every_package_folder_and_nothing_else(built: tuple[Path, str]) -> None:
    wheel, _ = built
    expected, shipped = source_files(ROOT), wheel_files(wheel)
    assert sorted(expected - shipped) == [], "left out of the wheel"
    assert sorted(shipped - expected) == [], "in the wheel but not in the tree"
    for folder in ("hooks", "langgraph", "mcp_server", "uptake"):  # the four the 0.1.0 wheel lacked
        assert f"handoff_files/{folder}/__init__.py" in shipped


def test_building_the_wheel_prints_no_setuptools_warning(built: tuple[Path, str]) -> None:
    _, output = built
    warned = [line for line in output.splitlines() if any(mark in line for mark in WARNING_MARKS)]
    # pip's own notes about this machine's extra index folders are not the build's
    assert [line for line in warned if "Location 'file:" not in line] == []


@pytest.mark.slow  # make slow: builds a copied tree's wheel; CI's make installed builds and installs the real one
def test_a_new_subpackage_is_in_the_wheel_without_being_listed(tmp_path: Path) -> None:
    tree = copy_tree(tmp_path / "tree")
    (tree / "handoff_files" / "brand_new" / "deeper").mkdir(parents=True)
    (tree / "handoff_files" / "brand_new" / "__init__.py").write_text('"""A folder nobody listed."""\n')
    (tree / "handoff_files" / "brand_new" / "deeper" / "__init__.py").write_text("")
    (tree / "schemas" / "later").mkdir()
    (tree / "schemas" / "later" / "x.schema.json").write_text("{}")
    dist = tmp_path / "dist"
    wheel, _ = build_wheel(tree, dist)
    shipped = wheel_files(wheel)
    assert "handoff_files/brand_new/__init__.py" in shipped
    assert "handoff_files/brand_new/deeper/__init__.py" in shipped
    assert source_files(tree) - shipped == set()


@pytest.mark.slow  # a venv and an install: ~30 s (CI's `make installed` installs the wheel too, with its extras)
def test_the_installed_wheel_migrates_old_samples_outside_the_source_tree(
    built: tuple[Path, str], tmp_path: Path
) -> None:
    wheel, _ = built
    venv, work = tmp_path / "venv", tmp_path / "work"
    env = _env()
    subprocess.run([sys.executable, "-m", "venv", str(venv)], check=True, env=env)
    python = venv / "bin" / "python"
    subprocess.run([str(python), "-m", "pip", "install", "--quiet", str(wheel)], check=True, env=env, cwd=tmp_path)
    work.mkdir()
    for version in ("v0.8", "v1.0"):
        shutil.copy(ROOT / "samples" / version / "coding-task.json", work / f"{version}.json")
    done = subprocess.run(
        [str(python), "-c", CHECK, "v0.8.json", "v1.0.json"],
        capture_output=True,
        text=True,
        env=env,
        cwd=work,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["schemas"] == [
        "descriptor-1.0.schema.json",
        "descriptor-1.1.schema.json",
        "handoff-0.8.schema.json",
        "handoff-1.0.schema.json",
        "handoff-2.0.schema.json",
        "handoff-2.1.schema.json",
    ]
    assert result["steps"] == ["0.8", "1.0", "2.0"]
    assert result["v0.8.json"][:2] == ["2.1", "0.8"]
    assert result["v1.0.json"][:2] == ["2.1", "1.0"]
