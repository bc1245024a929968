"""``handoff install`` run as a user runs it: the installed script in a subprocess, on real settings files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from handoff_files.hooks.formats import Agent
from tests.hooks import documented
from tests.hooks.helpers import hook_lines


def handoff(*args: str, env: dict[str, str], cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """Run ``python -m handoff_files ARGS`` as a user would (this checkout, via *env*)."""
    argv = [sys.executable, "-m", "handoff_files", *args]
    return subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, check=False, timeout=60)


def _snapshot(project: Path) -> dict[str, bytes]:
    return {
        os.fspath(path.relative_to(project)): path.read_bytes()
        for path in sorted(project.rglob("*"))
        if path.is_file() and ".git" not in path.parts
    }


@pytest.mark.parametrize(
    ("agent", "name", "text"),
    [
        pytest.param("claude-code", ".claude/settings.json", '{"hooks": null}\n', id="claude-hooks-null"),
        pytest.param("codex", ".codex/hooks.json", '{"hooks": null}\n', id="codex-hooks-null"),
        pytest.param("cursor", ".cursor/hooks.json", '{"version": null, "hooks": {}}\n', id="cursor-version-null"),
        pytest.param("claude-code", ".mcp.json", '{"mcpServers": null}\n', id="servers-null"),
    ],
)
def test_a_null_where_an_entry_goes_is_refused_in_one_line_naming_the_file(
    agent: Agent, name: str, text: str, project: Path, subprocess_env: dict[str, str]
) -> None:
    path = project / name
    path.parent.mkdir(exist_ok=True)
    path.write_text(text)
    before = _snapshot(project)
    done = handoff("install", agent, "--project", os.fspath(project), env=subprocess_env)
    assert done.returncode == 1, (done.stdout, done.stderr)
    assert "Traceback" not in done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    assert os.fspath(path) in done.stderr
    assert "null" in done.stderr
    assert _snapshot(project) == before
    assert json.loads(path.read_text()) == json.loads(text)


VENV_HANDOFF = Path(sys.executable).parent / "handoff"  # the installed script of the environment under test
AGENT_PATH = "/usr/bin:/bin"  # an agent started elsewhere: this environment's bin folder is not on its PATH


def _installed_script(*args: str, env: dict[str, str]) -> subprocess.CompletedProcess[str]:
    """Run the installed ``handoff`` script by its path, as a user with the environment inactive would."""
    return subprocess.run(
        [os.fspath(VENV_HANDOFF), *args], env=env, capture_output=True, text=True, check=False, timeout=60
    )


@pytest.mark.skipif(not VENV_HANDOFF.is_file(), reason="needs the handoff script installed beside this Python")
@pytest.mark.parametrize("agent", ["claude-code", "cursor"])
def test_hooks_and_server_installed_from_an_environment_not_on_path_run_from_the_agents_path(
    agent: Agent, repository: Path, subprocess_env: dict[str, str]
) -> None:
    env = {**subprocess_env, "PATH": AGENT_PATH}
    done = _installed_script("install", agent, "--project", os.fspath(repository), env=env)
    assert done.returncode == 0, done.stderr
    assert "this machine's path" in done.stdout  # said loudly: the settings now name this machine's script
    hooks = json.loads(
        (repository / (".claude/settings.json" if agent == "claude-code" else ".cursor/hooks.json")).read_text()
    )
    entries = hooks["hooks"]["SessionStart" if agent == "claude-code" else "sessionStart"]
    command = entries[0]["hooks"][0]["command"] if agent == "claude-code" else entries[0]["command"]
    event = documented.event(agent, "session_start", repository)
    ran = subprocess.run(
        ["/bin/sh", "-c", command], input=json.dumps(event), env=env, capture_output=True, text=True, check=False
    )
    assert ran.returncode == 0, (command, ran.stderr)  # not 127: the agent's shell finds the command
    assert "No handoff has been saved" in ran.stdout
    [server] = json.loads((repository / (".mcp.json" if agent == "claude-code" else ".cursor/mcp.json")).read_text())[
        "mcpServers"
    ].values()
    helped = subprocess.run(
        [server["command"], *server["args"][: server["args"].index("mcp") + 1], "--help"],
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    assert helped.returncode == 0, helped.stderr


@pytest.mark.skipif(not VENV_HANDOFF.is_file(), reason="needs the handoff script installed beside this Python")
def test_a_handoff_on_the_agents_path_is_written_as_the_bare_name(
    repository: Path, tmp_path: Path, subprocess_env: dict[str, str]
) -> None:
    tools = tmp_path / "tools"  # as pipx or uv tool link the script into ~/.local/bin
    tools.mkdir()
    (tools / "handoff").symlink_to(VENV_HANDOFF)
    env = {**subprocess_env, "PATH": f"{tools}:{AGENT_PATH}"}
    done = _installed_script("install", "codex", "--project", os.fspath(repository), env=env)
    assert done.returncode == 0, done.stderr
    assert "this machine's path" not in done.stdout
    assert '"handoff hook codex"' in (repository / ".codex" / "hooks.json").read_text()


def test_install_from_a_subfolder_without_project_sets_up_the_repositorys_top(
    repository: Path, subprocess_env: dict[str, str]
) -> None:
    src = repository / "src" / "pkg"
    src.mkdir(parents=True)
    done = handoff("install", "claude-code", "--executable", "handoff", env=subprocess_env, cwd=src)
    assert done.returncode == 0, done.stderr
    assert (repository / ".claude" / "settings.json").is_file()
    assert (repository / ".handoff").is_dir()
    assert not (repository / "src" / ".claude").exists()
    assert not (src / ".claude").exists()
    assert not (src / ".handoff").exists()


@pytest.mark.parametrize(
    ("first", "second"),
    [
        pytest.param(["--thread", "THREAD"], [], id="then-the-default"),
        pytest.param([], ["--thread", "THREAD"], id="then-a-thread-elsewhere"),
    ],
)
def test_an_entry_on_another_thread_is_refused_never_left_beside_new_ones(
    first: list[str], second: list[str], repository: Path, tmp_path: Path, subprocess_env: dict[str, str]
) -> None:
    elsewhere = os.fspath(tmp_path / "threads" / "api")
    args = ["install", "claude-code", "--project", os.fspath(repository), "--executable", "handoff"]
    done = handoff(*args, *[elsewhere if word == "THREAD" else word for word in first], env=subprocess_env)
    assert done.returncode == 0, done.stderr
    settings = repository / ".claude" / "settings.json"
    document = json.loads(settings.read_text())
    del document["hooks"]["SessionEnd"]  # a hook the user removed, or one a newer install adds
    settings.write_text(json.dumps(document, indent=2) + "\n")
    before = _snapshot(repository)
    done = handoff(*args, *[elsewhere if word == "THREAD" else word for word in second], env=subprocess_env)
    assert done.returncode == 1, done.stdout
    assert "Traceback" not in done.stderr
    assert done.stderr.count("\n") == 1, done.stderr
    assert os.fspath(settings) in done.stderr
    assert elsewhere in done.stderr
    assert "two threads" in done.stderr
    assert _snapshot(repository) == before


@pytest.mark.parametrize(
    ("agent", "name"),
    [
        pytest.param("claude-code", ".mcp.json", id="claude-code"),
        pytest.param("cursor", ".cursor/mcp.json", id="cursor"),
        pytest.param("codex", ".codex/config.toml", id="codex"),
    ],
)
def test_the_shared_mcp_entry_names_the_thread_relative_to_the_project_so_a_clone_works(
    agent: Agent, name: str, repository: Path, tmp_path: Path, subprocess_env: dict[str, str]
) -> None:
    done = handoff("install", agent, "--project", os.fspath(repository), "--executable", "handoff", env=subprocess_env)
    assert done.returncode == 0, done.stderr
    text = (repository / name).read_text()
    assert os.fspath(repository) not in text  # nothing of this checkout's path in a file the team shares
    assert ".handoff/main" in text
    # another checkout at another path: the same file, and install there finds it already done
    other = tmp_path / "elsewhere" / "checkout"
    other.parent.mkdir()
    (repository / ".handoff").rmdir()
    repository.rename(other)
    again = handoff("install", agent, "--project", os.fspath(other), "--executable", "handoff", env=subprocess_env)
    assert again.returncode == 0, again.stderr
    assert (other / name).read_text() == text


def test_install_offers_to_keep_the_thread_out_of_git_and_does_it_when_asked(
    repository: Path, subprocess_env: dict[str, str]
) -> None:
    args = ["install", "claude-code", "--project", os.fspath(repository), "--executable", "handoff"]
    done = handoff(*args, "--dry-run", env=subprocess_env)
    assert "--gitignore" in done.stdout  # offered, not done
    assert not (repository / ".gitignore").exists()
    done = handoff(*args, "--gitignore", env=subprocess_env)
    assert done.returncode == 0, done.stderr
    assert (repository / ".gitignore").read_text() == ".handoff/\n"
    again = handoff(*args, "--gitignore", env=subprocess_env)
    assert (repository / ".gitignore").read_text() == ".handoff/\n"
    assert "--gitignore" not in again.stdout


def test_codex_gets_a_session_end_hook_within_its_3_second_cap_and_the_current_feature_key(
    repository: Path, subprocess_env: dict[str, str]
) -> None:
    done = handoff("install", "codex", "--project", os.fspath(repository), env=subprocess_env)  # runs from anywhere
    assert done.returncode == 0, done.stderr
    assert "codex_hooks = true" not in done.stdout  # hooks are on by default now
    assert "`[features] hooks = false`" in done.stdout  # the key's current name
    hooks = json.loads((repository / ".codex" / "hooks.json").read_text())["hooks"]
    assert sorted(hooks) == sorted(documented.INSTALLED_EVENTS["codex"])
    [[end]] = [group["hooks"] for group in hooks["SessionEnd"]]
    assert end["timeout"] <= documented.CODEX_SESSION_END_CAP
    event = json.dumps(documented.event("codex", "session_end", repository, reason="exit"))
    ran = subprocess.run(
        ["/bin/sh", "-c", end["command"]], input=event, env=subprocess_env, capture_output=True, text=True, check=False
    )
    assert (ran.returncode, ran.stdout) == (0, ""), ran.stderr
    [line] = hook_lines(repository / ".handoff" / "main")
    assert (line.extra["agent"], line.extra["hook_event"], line.extra["reason"]) == ("codex", "SessionEnd", "exit")
