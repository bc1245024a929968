"""Install: the hook entries and the MCP server merged into each agent's settings, adding only, never overwriting."""

from __future__ import annotations

import difflib
import importlib
import json
import os
import shlex
import subprocess
import tomllib
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from handoff_files.foundation.errors import HandoffNotFoundError, HandoffParseError, HandoffValidationError
from handoff_files.hooks import install
from handoff_files.hooks.executable import Resolved
from handoff_files.hooks.formats import AGENTS, Agent
from handoff_files.hooks.jsonedit import render_new
from handoff_files.hooks.run import run_hook
from tests.hooks import documented
from tests.hooks.helpers import hook_lines


@pytest.fixture(autouse=True)
def _bare_name(monkeypatch: pytest.MonkeyPatch) -> None:
    """These tests are about merging: the command install finds for itself is the bare name here
    (which one it finds, from which PATH, is tested on the installed script in test_install_cli.py)."""
    module = importlib.import_module("handoff_files.hooks.install")  # the package's `install` is the function
    monkeypatch.setattr(module, "resolve_executable", lambda: Resolved("handoff", None))


def _load(path: Path) -> dict[str, Any]:
    text = path.read_text()
    document = tomllib.loads(text) if path.suffix == ".toml" else json.loads(text)
    assert isinstance(document, dict)
    return document


def _only_insertions(before: str, after: str) -> None:
    """Every byte of *before* is in *after*, in order and untouched: the edit only inserted text."""
    ops = difflib.SequenceMatcher(None, before, after, autojunk=False).get_opcodes()
    assert {op for op, *_ in ops} <= {"equal", "insert"}, [op for op in ops if op[0] not in ("equal", "insert")]


def _snapshot(project: Path) -> dict[str, bytes]:
    return {
        os.fspath(path.relative_to(project)): path.read_bytes()
        for path in sorted(project.rglob("*"))
        if path.is_file() and ".git" not in path.parts
    }


def _commands(document: dict[str, Any], event: str, agent: Agent) -> list[str]:
    entries = document["hooks"][event]
    if agent == "cursor":
        return [entry["command"] for entry in entries]
    return [hook["command"] for group in entries for hook in group["hooks"]]


def _hooks_file(agent: Agent) -> str:
    return next(name for name in documented.SETTINGS[agent] if "hooks" in name or "settings" in name)


def _server(project: Path, agent: Agent) -> dict[str, Any]:
    """The one MCP server install put in *project*'s settings for *agent*."""
    name = next(name for name in documented.SETTINGS[agent] if "mcp" in name or name.endswith(".toml"))
    [server] = _load(project / name)["mcp_servers" if name.endswith(".toml") else "mcpServers"].values()
    assert isinstance(server, dict)
    return server


@pytest.mark.parametrize("agent", AGENTS)
def test_a_fresh_project_gets_documented_settings_and_a_second_install_changes_nothing(
    agent: Agent, project: Path
) -> None:
    report = install(agent, project, dry_run=False)
    assert report.changed
    assert {change.action for change in report.files} == {"created"}
    for relative, schema in documented.SETTINGS[agent].items():
        document = _load(project / relative)
        jsonschema.validate(document, schema)
        if relative.endswith(".json"):  # a new file reads as if written whole: two-space JSON, final newline
            assert (project / relative).read_text() == render_new(document)
    hooks = _load(project / next(name for name in documented.SETTINGS[agent] if "hooks" in name or "settings" in name))
    assert sorted(hooks["hooks"]) == sorted(documented.INSTALLED_EVENTS[agent])
    for event in documented.INSTALLED_EVENTS[agent]:
        assert _commands(hooks, event, agent) == [f"handoff hook {agent}"]
    before = _snapshot(project)
    again = install(agent, project, dry_run=False)
    assert not again.changed
    assert {change.action for change in again.files} == {"unchanged"}
    assert "nothing to do" in "\n".join(again.lines())
    assert _snapshot(project) == before


@pytest.mark.parametrize("agent", AGENTS)
def test_the_mcp_server_runs_handoff_mcp_on_the_projects_thread(agent: Agent, project: Path) -> None:
    install(agent, project, dry_run=False)
    name = next(name for name in documented.SETTINGS[agent] if "mcp" in name or name.endswith(".toml"))
    servers = _load(project / name)["mcp_servers" if name.endswith(".toml") else "mcpServers"]
    thread = os.fspath(Path(".handoff", "main"))  # the project's own thread, relative to it (the file is shared)
    assert servers == {"handoff": {"command": "handoff", "args": ["mcp", "--thread", thread]}}


@pytest.mark.parametrize("agent", AGENTS)
def test_a_dry_run_writes_nothing_and_shows_the_change(agent: Agent, project: Path) -> None:
    before = _snapshot(project)
    report = install(agent, project, dry_run=True)
    assert _snapshot(project) == before
    assert not any((project / name).exists() for name in documented.SETTINGS[agent])
    assert report.dry_run
    assert report.changed
    text = "\n".join(report.lines())
    assert "would create" in text
    assert "dry run: nothing was written" in text
    for change in report.files:
        assert change.diff().startswith("--- /dev/null")
    assert json.loads(json.dumps(report.to_json()))["dry_run"] is True


CLAUDE_SETTINGS = """{
    "$schema": "https://json.schemastore.org/claude-code-settings.json",
    "permissions": {
        "allow": ["Bash(npm run lint)", "Read(~/.zshrc)"],
        "deny": []
    },
    "env": {"FOO": "bär ✓"},
    "hooks": {
        "Stop": [
            {
                "hooks": [
                    {"type": "command", "command": "./notify.sh", "timeout": 5}
                ]
            }
        ],
        "PostToolUse": [
            {"matcher": "Edit|Write", "hooks": [{"type": "command", "command": "prettier --write"}]}
        ]
    },
    "model": "opus"
}
"""


def test_claude_settings_keep_every_byte_and_gain_only_our_entries(project: Path) -> None:
    settings = project / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(CLAUDE_SETTINGS)
    report = install("claude-code", project, dry_run=False)
    after = settings.read_text()
    _only_insertions(CLAUDE_SETTINGS, after)
    document = json.loads(after)
    original = json.loads(CLAUDE_SETTINGS)
    assert list(document) == list(original)  # key order kept
    assert {key: document[key] for key in ("$schema", "permissions", "env", "model")} == {
        key: original[key] for key in ("$schema", "permissions", "env", "model")
    }
    assert document["hooks"]["PostToolUse"] == original["hooks"]["PostToolUse"]
    assert _commands(document, "Stop", "claude-code") == ["./notify.sh", "handoff hook claude-code"]
    assert list(document["hooks"]) == ["Stop", "PostToolUse", "SessionStart", "PreCompact", "SessionEnd"]
    assert '\n            {\n                "hooks": [' in after  # the new group indented like the old, four spaces
    [change] = [c for c in report.files if c.path == settings]
    assert change.action == "updated"
    assert "hooks.Stop: handoff hook claude-code" in change.added


def test_crlf_tabs_and_a_one_line_file_keep_their_style(project: Path) -> None:
    hooks = project / ".codex" / "hooks.json"
    hooks.parent.mkdir()
    stop = '{"hooks": [{"type": "command", "command": "x"}]}'
    text = f'{{\r\n\t"hooks": {{\r\n\t\t"Stop": [\r\n\t\t\t{stop}\r\n\t\t]\r\n\t}}\r\n}}\r\n'
    hooks.write_bytes(text.encode())
    (project / ".cursor").mkdir()
    one_line = '{"mcpServers": {"other": {"command": "npx", "args": ["srv"]}}}'
    (project / ".cursor" / "mcp.json").write_text(one_line)
    install("codex", project, dry_run=False)
    install("cursor", project, dry_run=False)
    after = hooks.read_bytes().decode()
    _only_insertions(text, after)
    assert "\n" not in after.replace("\r\n", "")  # every line still ends in CRLF
    assert '\r\n\t\t"SessionStart": [\r\n\t\t\t{\r\n\t\t\t\t"hooks": [' in after
    mcp = (project / ".cursor" / "mcp.json").read_text()
    _only_insertions(one_line, mcp)
    assert "\n" not in mcp
    assert json.loads(mcp)["mcpServers"]["other"] == {"command": "npx", "args": ["srv"]}


@pytest.mark.parametrize(
    "command",
    [
        "handoff hook claude-code",
        "/home/me/.venv/bin/handoff hook claude-code",  # another thread is refused: test_install_cli.py
        "python -m handoff_files hook claude-code",
        "'/opt/my tools/handoff' hook claude-code",
    ],
)
def test_an_existing_handoff_hook_is_kept_as_it_is(command: str, project: Path) -> None:
    settings = project / ".claude" / "settings.json"
    settings.parent.mkdir()
    text = json.dumps({"hooks": {"Stop": [{"hooks": [{"type": "command", "command": command}]}]}}, indent=2)
    settings.write_text(text)
    report = install("claude-code", project, dry_run=False)
    document = json.loads(settings.read_text())
    assert _commands(document, "Stop", "claude-code") == [command]
    [change] = [c for c in report.files if c.path == settings]
    assert any(kept.startswith("hooks.Stop:") for kept in change.kept)
    assert not any(added.startswith("hooks.Stop:") for added in change.added)


def test_a_hook_for_another_agent_does_not_count(project: Path) -> None:
    settings = project / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text(
        json.dumps({"hooks": {"Stop": [{"hooks": [{"type": "command", "command": "handoff hook codex"}]}]}})
    )
    install("claude-code", project, dry_run=False)
    assert _commands(json.loads(settings.read_text()), "Stop", "claude-code") == [
        "handoff hook codex",
        "handoff hook claude-code",
    ]


def test_an_existing_mcp_server_is_never_overwritten(project: Path) -> None:
    theirs = {"command": "node", "args": ["their-handoff-server.js"]}
    ours_elsewhere = {"command": "/usr/bin/handoff", "args": ["mcp", "--thread", "/srv/other"]}
    (project / ".mcp.json").write_text(json.dumps({"mcpServers": {"handoff": theirs}}, indent=2) + "\n")
    report = install("claude-code", project, dry_run=False)
    servers = json.loads((project / ".mcp.json").read_text())["mcpServers"]
    assert servers["handoff"] == theirs  # a different server holds the name: ours takes the next one
    assert servers["handoff-files"]["args"][0] == "mcp"
    assert any("mcpServers.handoff-files" in line for line in report.lines())

    (project / ".cursor").mkdir()
    (project / ".cursor" / "mcp.json").write_text(json.dumps({"mcpServers": {"mine": ours_elsewhere}}))
    with pytest.raises(HandoffValidationError) as caught:  # ours, on another thread: the saves would go there
        install("cursor", project, dry_run=False)
    assert "mcpServers.mine already runs handoff on /srv/other" in str(caught.value)
    assert json.loads((project / ".cursor" / "mcp.json").read_text()) == {"mcpServers": {"mine": ours_elsewhere}}


CODEX_CONFIG = """# my codex settings
model = "gpt-5-codex"   # keep this comment

[features]
hooks = true

[mcp_servers.docs]
command = "npx"
args = ["-y", "docs-server"]
"""


def test_codex_config_toml_keeps_every_byte_and_gains_one_table(project: Path) -> None:
    config = project / ".codex" / "config.toml"
    config.parent.mkdir()
    config.write_text(CODEX_CONFIG)
    install("codex", project, dry_run=False)
    after = config.read_text()
    assert after.startswith(CODEX_CONFIG)
    document = tomllib.loads(after)
    assert document["features"] == {"hooks": True}
    assert document["mcp_servers"]["docs"] == {"command": "npx", "args": ["-y", "docs-server"]}
    assert document["mcp_servers"]["handoff"]["args"][:2] == ["mcp", "--thread"]


def test_codex_servers_as_an_inline_table_are_refused_and_nothing_is_written(project: Path) -> None:
    config = project / ".codex" / "config.toml"
    config.parent.mkdir()
    config.write_text('mcp_servers = { docs = { command = "npx" } }\n')
    before = _snapshot(project)
    with pytest.raises(HandoffValidationError) as caught:
        install("codex", project, dry_run=False)
    assert caught.value.path == os.fspath(config)
    assert _snapshot(project) == before  # not even .codex/hooks.json, merged first


BROKEN = [
    pytest.param("claude-code", ".claude/settings.json", '{"hooks": {', HandoffParseError, id="claude-truncated"),
    pytest.param("claude-code", ".mcp.json", '{"mcpServers": {}, "mcpServers": {}}', HandoffParseError, id="dup-keys"),
    pytest.param("claude-code", ".claude/settings.json", "// comment\n{}", HandoffParseError, id="comment"),
    pytest.param("claude-code", ".claude/settings.json", '["a list"]', HandoffValidationError, id="not-an-object"),
    pytest.param("claude-code", ".claude/settings.json", '{"hooks": []}', HandoffValidationError, id="hooks-a-list"),
    pytest.param("codex", ".codex/hooks.json", '{"hooks": {"Stop": {}}}', HandoffValidationError, id="event-not-list"),
    pytest.param("codex", ".codex/config.toml", "model = ", HandoffParseError, id="bad-toml"),
    pytest.param("cursor", ".cursor/hooks.json", '{"version": 2, "hooks": {}}', HandoffValidationError, id="cursor-v2"),
    pytest.param("cursor", ".cursor/mcp.json", '{"mcpServers": "none"}', HandoffValidationError, id="servers-a-string"),
]


@pytest.mark.parametrize(("agent", "name", "text", "error"), BROKEN)
def test_a_settings_file_that_cannot_be_merged_is_refused_by_name_and_nothing_is_written(
    agent: Agent, name: str, text: str, error: type[Exception], project: Path
) -> None:
    path = project / name
    path.parent.mkdir(exist_ok=True)
    path.write_text(text)
    before = _snapshot(project)
    with pytest.raises(error) as caught:
        install(agent, project, dry_run=False)
    assert os.fspath(path) in str(caught.value)
    assert _snapshot(project) == before


def test_cursor_hooks_without_a_version_get_one(project: Path) -> None:
    hooks = project / ".cursor" / "hooks.json"
    hooks.parent.mkdir()
    text = '{\n  "hooks": {\n    "afterFileEdit": [{"command": "./format.sh"}]\n  }\n}\n'
    hooks.write_text(text)
    install("cursor", project, dry_run=False)
    after = hooks.read_text()
    _only_insertions(text, after)
    document = json.loads(after)
    assert document["version"] == 1
    assert document["hooks"]["afterFileEdit"] == [{"command": "./format.sh"}]
    assert document["hooks"]["stop"] == [{"command": "handoff hook cursor", "timeout": 30, "loop_limit": 1}]


def test_an_empty_object_gets_pretty_entries(project: Path) -> None:
    (project / ".mcp.json").write_text("{}\n")
    install("claude-code", project, dry_run=False)
    text = (project / ".mcp.json").read_text()
    assert text.startswith('{"mcpServers": {"handoff": {"command": "handoff"')  # a one-line file stays one line
    assert json.loads(text)["mcpServers"]["handoff"]["command"] == "handoff"


def test_a_files_mode_is_kept(project: Path) -> None:
    settings = project / ".claude" / "settings.json"
    settings.parent.mkdir()
    settings.write_text("{\n}\n")
    settings.chmod(0o640)
    install("claude-code", project, dry_run=False)
    assert settings.stat().st_mode & 0o777 == 0o640
    assert (project / ".mcp.json").stat().st_mode & 0o777 == 0o644


def test_another_thread_and_executable_are_written_into_the_commands(project: Path, tmp_path: Path) -> None:
    thread = tmp_path / "threads" / "api"
    report = install("cursor", project, dry_run=False, thread=thread, executable="/opt/bin/handoff")
    assert report.thread == thread
    document = json.loads((project / ".cursor" / "hooks.json").read_text())
    assert _commands(document, "stop", "cursor") == [f"/opt/bin/handoff hook cursor --thread {thread}"]
    server = json.loads((project / ".cursor" / "mcp.json").read_text())["mcpServers"]["handoff"]
    assert server == {"command": "/opt/bin/handoff", "args": ["mcp", "--thread", os.fspath(thread)]}


def test_a_missing_project_is_refused(tmp_path: Path) -> None:
    with pytest.raises(HandoffNotFoundError):
        install("claude-code", tmp_path / "nowhere", dry_run=True)


@pytest.mark.parametrize("agent", AGENTS)
def test_in_a_sub_project_of_a_repository_the_hooks_and_the_mcp_server_use_one_thread(
    agent: Agent, repository: Path
) -> None:
    project = repository
    sub = project / "packages" / "api"
    (sub / "src").mkdir(parents=True)
    install(agent, sub, dry_run=False)
    args = _server(sub, agent)["args"]
    served = sub / args[args.index("--thread") + 1]  # relative to the project, where the agent starts it
    start = documented.INSTALLED_EVENTS[agent][0]
    [command] = _commands(_load(sub / _hooks_file(agent)), start, agent)
    words = shlex.split(command)
    given = Path(words[words.index("--thread") + 1]) if "--thread" in words else None
    for cwd in (sub, sub / "src"):  # the agent started in the sub-project, or went into a folder of it
        body = documented.event(agent, "session_start", cwd, source=documented.SESSION_START_SOURCES[agent][0])
        reply = run_hook(agent, json.dumps(body).encode(), thread=given)
        assert reply.exit_code == 0
    assert len(hook_lines(served)) == 2  # where the model's handoff_save goes, the hooks look
    assert not (project / ".handoff").exists()


def test_install_marks_the_project_with_a_private_handoff_folder_and_a_dry_run_only_says_so(repository: Path) -> None:
    project = repository
    sub = project / "sub"
    sub.mkdir()
    dry = install("claude-code", sub, dry_run=True)
    assert not (sub / ".handoff").exists()
    assert dry.handoff_dir == sub / ".handoff"
    assert f"would create {sub / '.handoff'}" in "\n".join(dry.lines())
    assert dry.to_json()["handoff_dir"] == os.fspath(sub / ".handoff")
    report = install("claude-code", sub, dry_run=False)
    assert report.handoff_dir == sub / ".handoff"
    assert (sub / ".handoff").is_dir()
    assert (sub / ".handoff").stat().st_mode & 0o777 == 0o700
    again = install("claude-code", sub, dry_run=False)
    assert (again.changed, again.handoff_dir) == (False, None)
    (sub / ".handoff").rmdir()
    assert install("claude-code", sub, dry_run=False).changed  # the folder alone is a change worth making


def test_a_thread_elsewhere_is_named_in_the_hooks_and_no_handoff_folder_is_made(
    repository: Path, tmp_path: Path
) -> None:
    project = repository
    report = install("codex", project, dry_run=False, thread=tmp_path / "threads" / "api")
    assert report.handoff_dir is None
    assert not (project / ".handoff").exists()


EXECUTABLES = [
    pytest.param("uv run handoff", ["uv", "run", "handoff"], id="uv-run"),
    pytest.param("python3 -m handoff_files", ["python3", "-m", "handoff_files"], id="python-m"),
    pytest.param("'/opt/my tools/handoff'", ["/opt/my tools/handoff"], id="quoted-path-with-a-space"),
    pytest.param("/usr/local/bin/hf --quiet", ["/usr/local/bin/hf", "--quiet"], id="a-name-of-its-own"),
]


@pytest.mark.parametrize("agent", AGENTS)
@pytest.mark.parametrize(("executable", "words"), EXECUTABLES)
def test_an_executable_with_arguments_is_split_into_words_and_a_second_install_changes_nothing(
    agent: Agent, executable: str, words: list[str], project: Path
) -> None:
    install(agent, project, dry_run=False, executable=executable)
    hooks = _load(project / _hooks_file(agent))
    for event in documented.INSTALLED_EVENTS[agent]:
        [command] = _commands(hooks, event, agent)
        assert shlex.split(command) == [*words, "hook", agent]
    thread = os.fspath(Path(".handoff", "main"))
    assert _server(project, agent) == {"command": words[0], "args": [*words[1:], "mcp", "--thread", thread]}
    before = _snapshot(project)
    again = install(agent, project, dry_run=False, executable=executable)
    assert not again.changed
    assert _snapshot(project) == before


def test_the_installed_hook_command_runs_in_a_shell(project: Path, tmp_path: Path) -> None:
    folder = tmp_path / "my tools"
    folder.mkdir()
    fake = folder / "handoff"
    fake.write_text("#!/bin/sh\nprintf '%s|' \"$@\"\n")
    fake.chmod(0o755)
    install("claude-code", project, dry_run=False, executable=f"{shlex.quote(os.fspath(fake))} --from-test")
    [command] = _commands(_load(project / ".claude" / "settings.json"), "Stop", "claude-code")
    done = subprocess.run(["/bin/sh", "-c", command], capture_output=True, text=True, check=False)
    assert (done.returncode, done.stdout, done.stderr) == (0, "--from-test|hook|claude-code|", "")


@pytest.mark.parametrize("executable", ["", "   ", "'unclosed"])
def test_an_executable_that_is_not_a_command_is_refused_and_nothing_is_written(
    executable: str, repository: Path
) -> None:
    project = repository
    before = _snapshot(project)
    with pytest.raises(HandoffValidationError) as caught:
        install("claude-code", project, dry_run=False, executable=executable)
    assert "executable" in str(caught.value)
    assert _snapshot(project) == before
    assert not (project / ".handoff").exists()
