"""Every command's ``--json`` output, run on real threads, checked against its schema in ``schemas/cli/``.

``docs/cli-json.md`` describes the outputs; each subcommand ``build_parser`` lists is run here, or
listed in :data:`NO_JSON` with the reason it prints none.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import jsonschema
import pytest
from referencing import Registry, Resource

from handoff_files import HandoffStore, LocalBlobStore, handoff_checkpoint, transfer
from handoff_files.cli.main import build_parser, main
from handoff_files.inbox.lifecycle import HandoffInbox
from handoff_files.uptake.briefing import briefing_for
from tests.conftest import ROOT

SCHEMAS: Final = ROOT / "schemas"

#: The subcommands with no ``--json`` (the parser refuses it), and why.
NO_JSON: Final = {
    "mcp": "stdout is the MCP protocol stream (JSON-RPC over stdio), read by the MCP client",
    "hook": "stdout is the coding agent's own hook reply, in the format that agent documents",
    "completion": "stdout is a shell script, for the shell to evaluate",
}

SW4RM_CONTEXT: Final = b'{"conversation_history":[{"content":"hi","role":"user"}],"metadata":{},"tool_state":{"k":1}}'


def _registry() -> Registry[Any]:
    """Every schema under ``schemas/`` by its ``$id``, so ``../handoff-2.0.schema.json`` and the like resolve."""
    resources = []
    for path in sorted(SCHEMAS.rglob("*.schema.json")):
        document = json.loads(path.read_text(encoding="utf-8"))
        resources.append((document["$id"], Resource.from_contents(document)))
    return Registry().with_resources(resources)


REGISTRY: Final = _registry()


def check(document: Any, schema_name: str) -> None:
    """Validate *document* against ``schemas/cli/<schema_name>.schema.json`` (the schema itself is checked first)."""
    schema = json.loads((SCHEMAS / "cli" / f"{schema_name}.schema.json").read_text(encoding="utf-8"))
    jsonschema.Draft202012Validator.check_schema(schema)
    jsonschema.Draft202012Validator(schema, registry=REGISTRY).validate(document)


def subcommands() -> list[str]:
    """Every command a person can type: ``show``, …, and each ``inbox`` action as ``inbox list`` …."""

    def names(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
        action = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        return dict(action.choices)

    found = []
    for name, sub in names(build_parser()).items():
        if any(isinstance(a, argparse._SubParsersAction) for a in sub._actions):
            found += [f"{name} {action}" for action in names(sub)]
        else:
            found.append(name)
    return found


@dataclass
class World:
    """Real threads and their neighbours, made through the library, for the commands to run on."""

    root: Path
    alpha: Path  # a thread with two sealed generations
    blobs: Path
    descriptor: Path  # alpha's newest generation, exported to `blobs`
    inbox: Path  # one PENDING request from alpha to beta, with the descriptor
    request_id: str
    legacy: Path  # a thread whose primary is a 1.0 handoff

    def path(self, name: str) -> str:
        return str(self.root / name)


@pytest.fixture
def world(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> World:
    """A fresh world per command: each may change what it runs on (seal, migrate, acknowledge …)."""
    # `handoff edit`'s editor: a real program that appends a warning to the layers it is given
    editor = tmp_path / "editor.py"
    editor.write_text(
        "import json, sys\npath = sys.argv[1]\ndoc = json.load(open(path))\n"
        "doc['warnings'].append({'text': 'edited by hand'})\njson.dump(doc, open(path, 'w'))\n",
        encoding="utf-8",
    )
    monkeypatch.setenv("VISUAL", f"{sys.executable} {editor}")
    alpha = tmp_path / "alpha"
    store = HandoffStore(alpha)
    store.save({"narrative": "Ported half the importer.", "priorities": [{"task": "port it", "urgency": "first"}]})
    store.save({"narrative": "Ported most of the importer.", "warnings": [{"text": "dates are local time"}]})
    blobs = tmp_path / "blobs"
    descriptor = handoff_checkpoint(alpha, blobs=LocalBlobStore(blobs), to_agent="beta")
    (tmp_path / "d.json").write_text(descriptor.to_json(), encoding="utf-8")
    inbox = tmp_path / "inbox"
    request = HandoffInbox(inbox).request_handoff("alpha", "beta", "needs SQL", descriptor=descriptor, timeout=600)
    legacy = tmp_path / "old-run"
    legacy.mkdir()
    shutil.copyfile(ROOT / "samples" / "v1.0" / "coding-task.json", legacy / "handoff.json")
    (tmp_path / "context.bin").write_bytes(SW4RM_CONTEXT)
    (tmp_path / "content.json").write_text('{"narrative": "Ported the importer."}', encoding="utf-8")
    (tmp_path / "project").mkdir()
    return World(tmp_path, alpha, blobs, tmp_path / "d.json", inbox, request.handoff_id, legacy)


def _edited(w: World) -> str:
    """alpha's primary as a person edited it (new text, a new mtime), ready for `seal`."""
    primary = w.alpha / "handoff.json"
    primary.write_text(primary.read_text(encoding="utf-8").replace("most", "all"), encoding="utf-8")
    os.utime(primary, (primary.stat().st_mtime + 60, primary.stat().st_mtime + 60))
    return str(w.alpha)


def _code(w: World) -> str:
    briefing = briefing_for(w.alpha)
    assert briefing is not None
    assert briefing.code is not None
    return briefing.code


def _accepted(w: World) -> str:
    HandoffInbox(w.inbox).accept_handoff(w.request_id)
    return w.request_id


def _handed_on(w: World) -> str:
    """alpha, transferred to a new thread: closed, with a transferred.json naming the target."""
    transfer(w.alpha, w.root / "gamma", blobs=LocalBlobStore(w.blobs))
    return str(w.alpha)


def _rebuilt(w: World) -> str:
    """alpha with its handoff files lost: a restore rebuilds it from state.json and the journal."""
    for path in [w.alpha / "handoff.json", *(w.alpha / "history").iterdir()]:
        path.unlink()
    return str(w.alpha)


def _graphs(w: World) -> str:
    """A LangGraph saver root holding one checkpoint (skipped without the [langgraph] extra)."""
    checkpoints = pytest.importorskip("langgraph.checkpoint.base")
    from handoff_files.langgraph import HandoffSaver  # needs the extra, checked above

    config: Any = {"configurable": {"thread_id": "t", "checkpoint_ns": ""}}
    HandoffSaver(w.root / "graphs").put(config, checkpoints.empty_checkpoint(), {"step": 0}, {})
    return w.path("graphs")


def _key(w: World) -> str:
    """A signing key made by the library (tmp/keys/shown)."""
    from handoff_files.signing.keys import create_key

    return str(create_key(w.root / "keys" / "shown").path)


#: The agent `handoff run` starts: it acknowledges its context, as an agent must, and finishes.
ACKNOWLEDGING_AGENT: Final = (
    "import os; from handoff_files import HandoffStore; HandoffStore(os.environ['HANDOFF_DIR']).acknowledge()"
)

Argv = Callable[[World], list[str]]


@dataclass(frozen=True)
class Case:
    """One run: the command as ``build_parser`` names it, its schema, its argv (before ``--json``), its exit code."""

    command: str
    schema: str
    argv: Argv
    exit_code: int = 0


CASES: Final = {
    "init": Case("init", "init", lambda w: ["init", w.path("fresh")]),
    "save": Case("save", "save", lambda w: ["save", str(w.alpha), w.path("content.json")]),
    "show": Case("show", "show", lambda w: ["show", str(w.alpha)]),
    "show-file": Case("show", "show", lambda w: ["show", str(w.legacy / "handoff.json")]),
    "show-transferred": Case("show", "show", lambda w: ["show", _handed_on(w)]),
    "show-rebuilt": Case("show", "show", lambda w: ["show", _rebuilt(w)]),
    "validate": Case("validate", "validate", lambda w: ["validate", str(w.alpha), w.path("nope.json")], 1),
    "seal-nothing": Case("seal", "seal", lambda w: ["seal", str(w.alpha)]),
    "seal-edit": Case("seal", "seal", lambda w: ["seal", _edited(w)]),
    "migrate": Case("migrate", "migrate", lambda w: ["migrate", str(w.legacy)]),
    "migrate-dry-run": Case("migrate", "migrate", lambda w: ["migrate", str(w.legacy), "--dry-run"]),
    "migrate-current": Case("migrate", "migrate", lambda w: ["migrate", str(w.alpha)]),
    "import": Case("import", "import", lambda w: ["import", "--from", "sw4rm", w.path("t2"), w.path("context.bin")]),
    "export-context": Case(
        "export-context", "export-context", lambda w: ["export-context", "--to", "sw4rm", str(w.alpha)]
    ),
    "export-context-o": Case(
        "export-context",
        "export-context",
        lambda w: ["export-context", "--to", "sw4rm", str(w.alpha), "-o", w.path("c")],
    ),
    "doctor": Case("doctor", "doctor", lambda w: ["doctor", str(w.alpha)]),
    "log": Case("log", "log", lambda w: ["log", str(w.alpha)]),
    "run": Case("run", "run", lambda w: ["run", str(w.alpha), "--", sys.executable, "-c", ACKNOWLEDGING_AGENT]),
    "history": Case("history", "history", lambda w: ["history", str(w.alpha)]),
    "diff": Case("diff", "diff", lambda w: ["diff", str(w.alpha)]),
    "edit": Case("edit", "edit", lambda w: ["edit", str(w.alpha)]),
    "set": Case("set", "set", lambda w: ["set", str(w.alpha), "state.data.ported=12"]),
    "set-dry-run": Case("set", "set", lambda w: ["set", str(w.alpha), "narrative=Done.", "--dry-run"]),
    "show-generation": Case("show", "show", lambda w: ["show", str(w.alpha), "--generation", "1"]),
    "log-last": Case("log", "log", lambda w: ["log", str(w.alpha), "-n", "1", "--since", "1d"]),
    "prune-thread": Case("prune", "prune", lambda w: ["prune", str(w.alpha), "--keep", "1", "--dry-run"]),
    "prune-langgraph": Case("prune", "prune", lambda w: ["prune", _graphs(w), "--keep", "1"]),
    "brief": Case("brief", "brief", lambda w: ["brief", str(w.alpha)]),
    "acknowledge": Case("acknowledge", "acknowledge", lambda w: ["acknowledge", str(w.alpha), _code(w)]),
    "install": Case("install", "install", lambda w: ["install", "codex", "--project", w.path("project"), "--dry-run"]),
    "trust": Case("trust", "trust", lambda w: ["trust", str(w.alpha)]),
    "trust-reset": Case("trust", "trust", lambda w: ["trust", str(w.alpha), "--reset"]),
    "verify": Case("verify", "verify", lambda w: ["verify", str(w.alpha)]),
    "keys create": Case("keys", "keys", lambda w: ["keys", "create", w.path("keys/agent"), "--principal", "agent@ci"]),
    "keys show": Case("keys", "keys", lambda w: ["keys", "show", _key(w)]),
    "export": Case("export", "export", lambda w: ["export", str(w.alpha), "--blobs", str(w.blobs), "--to", "beta"]),
    "export-o": Case(
        "export", "export", lambda w: ["export", str(w.alpha), "--blobs", str(w.blobs), "-o", w.path("d2.json")]
    ),
    "adopt": Case("adopt", "adopt", lambda w: ["adopt", str(w.descriptor), w.path("beta"), "--blobs", str(w.blobs)]),
    "inbox list": Case("inbox list", "inbox-list", lambda w: ["inbox", str(w.inbox), "list", "--all"]),
    "inbox request": Case(
        "inbox request",
        "inbox-request",
        lambda w: ["inbox", str(w.inbox), "request", "--from", "alpha", "--to", "gamma", "--reason", "r"],
    ),
    "inbox accept": Case("inbox accept", "inbox-request", lambda w: ["inbox", str(w.inbox), "accept", w.request_id]),
    "inbox reject": Case(
        "inbox reject", "inbox-request", lambda w: ["inbox", str(w.inbox), "reject", w.request_id, "--reason", "busy"]
    ),
    "inbox complete": Case(
        "inbox complete", "inbox-request", lambda w: ["inbox", str(w.inbox), "complete", _accepted(w)]
    ),
    "inbox status": Case("inbox status", "inbox-request", lambda w: ["inbox", str(w.inbox), "status", w.request_id]),
}

#: Failures: with --json, the error object on stdout (exit 1 each).
FAILURES: Final[dict[str, Argv]] = {
    "missing": lambda w: ["show", w.path("nowhere")],
    "not-a-thread": lambda w: ["history", str(w.descriptor)],
    "no-content-file": lambda w: ["save", str(w.alpha), w.path("nope.json")],
    "bad-code": lambda w: ["acknowledge", str(w.alpha), "AAAA-AAAA"],
    "bad-request-id": lambda w: ["inbox", str(w.inbox), "status", "ffff"],
    "missing-generation": lambda w: ["diff", str(w.alpha), "7"],
}


def run(argv: list[str], capsys: pytest.CaptureFixture[str], exit_code: int) -> Any:
    """Run the command with ``--json`` (before ``--``: what follows it is the agent's); its one JSON document."""
    at = argv.index("--") if "--" in argv else len(argv)
    assert main([*argv[:at], "--json", *argv[at:]]) == exit_code, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("case", [pytest.param(case, id=name) for name, case in CASES.items()])
def test_every_command_prints_json_its_schema_describes(
    case: Case, world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    check(run(case.argv(world), capsys, case.exit_code), case.schema)


@pytest.mark.parametrize("argv", [pytest.param(argv, id=name) for name, argv in FAILURES.items()])
def test_a_failed_command_prints_the_error_object_its_schema_describes(
    argv: Argv, world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    check(run(argv(world), capsys, 1), "error")


def test_every_subcommand_is_run_here_or_says_why_it_prints_no_json() -> None:
    covered = {case.command for case in CASES.values()}
    assert sorted(set(subcommands()) - covered - set(NO_JSON)) == []
    assert not covered & set(NO_JSON)
    assert sorted(covered | set(NO_JSON)) == sorted(subcommands()), "a case or reason for a command that is gone"


@pytest.mark.parametrize("command", sorted(NO_JSON))
def test_a_command_without_json_output_does_not_offer_the_flag(command: str) -> None:
    parser = next(a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)).choices[command]
    assert "--json" not in parser._option_string_actions


def test_every_cli_schema_is_used_and_named_in_the_docs() -> None:
    used = {case.schema for case in CASES.values()} | {"error", "receipt", "signature"}
    on_disk = {path.name.removesuffix(".schema.json") for path in (SCHEMAS / "cli").glob("*.schema.json")}
    assert on_disk == used
    docs = (ROOT / "docs" / "cli-json.md").read_text(encoding="utf-8")
    missing = [name for name in sorted(on_disk) if f"schemas/cli/{name}.schema.json" not in docs]
    assert not missing, f"docs/cli-json.md does not name {missing}"


def _required(schema_name: str) -> tuple[str, list[str]] | None:
    """A schema's documented key order (its ``required``), and whether it is of an object or of a list's items."""
    schema = json.loads((SCHEMAS / "cli" / f"{schema_name}.schema.json").read_text(encoding="utf-8"))
    if "$ref" in schema or "allOf" in schema:
        return None  # a receipt and more (seal): the receipt's order, then the rest
    if "required" in schema:
        return "object", schema["required"]
    if "required" in schema.get("items", {}):
        return "items", schema["items"]["required"]
    return None  # a schema made of others (a receipt, a descriptor, one of two shapes)


@pytest.mark.parametrize("case", [pytest.param(case, id=name) for name, case in CASES.items()])
def test_every_command_prints_its_keys_in_the_order_its_schema_and_the_docs_give(
    case: Case, world: World, capsys: pytest.CaptureFixture[str]
) -> None:
    shape = _required(case.schema)
    if shape is None:
        pytest.skip(f"{case.schema}'s schema is made of others: checked where they are used")
    document = run(case.argv(world), capsys, case.exit_code)
    kind, order = shape
    for item in [document] if kind == "object" else document:
        assert list(item) == order, f"{case.command} --json prints its keys out of order"


def test_the_docs_name_each_commands_keys_in_its_schemas_order() -> None:
    """docs/cli-json.md's table names a command's keys in the order the command prints them (its schema's)."""
    docs = (ROOT / "docs" / "cli-json.md").read_text(encoding="utf-8")
    rows = [line for line in docs.splitlines() if line.startswith("| `")]
    checked = []
    for row in rows:
        _, prints, links = row.rsplit("|", 3)[-4:-1] if row.count("|") >= 4 else ("", "", "")
        found = re.search(r"schemas/cli/([a-z-]+)\.schema\.json", links)
        shape = None if found is None else _required(found[1])
        if shape is None:
            continue
        order = shape[1]
        while re.search(r"\([^()]*\)", prints):  # what a key's note says (in brackets) names no key of its own
            prints = re.sub(r"\([^()]*\)", "", prints)
        named = [word for word in re.findall(r"[`\"]([a-z_]+)[`\"]", prints) if word in order]
        named = list(dict.fromkeys(named))  # first mention of each
        if not named:
            continue  # the row points at another document instead of listing keys (an inbox request)
        assert named == order, f"docs/cli-json.md's row for {found[1] if found else row} names {named}, not {order}"
        checked.append(found[1] if found else row)
    assert {"doctor", "run", "history", "show"} <= set(checked)
