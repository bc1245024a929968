"""The wheel works: built, installed into a fresh venv outside the source tree, it migrates 0.8 and 1.0 samples."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

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


def test_the_installed_wheel_migrates_old_samples_outside_the_source_tree(tmp_path: Path) -> None:
    dist, venv, work = tmp_path / "dist", tmp_path / "venv", tmp_path / "work"
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME")}
    subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "-w", str(dist), str(ROOT)],
        check=True,
        env=env,
        cwd=tmp_path,
    )
    (wheel,) = dist.glob("handoff_files-*.whl")
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
        "handoff-0.8.schema.json",
        "handoff-1.0.schema.json",
        "handoff-2.0.schema.json",
    ]
    assert result["steps"] == ["0.8", "1.0"]
    assert result["v0.8.json"][:2] == ["2.0", "0.8"]
    assert result["v1.0.json"][:2] == ["2.0", "1.0"]
