"""README.md's examples run as written: every fenced block is run here, or named here with why it is not.

Python blocks run in a sandbox folder (the working directory: a tmp dir prepared with what the
block needs); a block that continues an earlier one runs in its namespace, in README order. The
kill-test block is written into a test file beside ``agent.py`` (``samples/steps_agent.py``, as the
README says) and run by pytest in a child process. Shell blocks run line by line, each with bash in a
sandbox prepared for that line, with the installed ``handoff`` first on PATH: each line exits 0, or
the code its comment gives (said in :data:`SHELL`). The README's ``/shared/`` paths (a folder the
agents share) are mapped into the sandbox by one textual substitution of that prefix. A block or a
line this file does not know fails :func:`test_every_readme_example_is_run_or_named`: no example
goes untested.
"""

from __future__ import annotations

import contextlib
import json
import os
import pty
import re
import shutil
import subprocess
import sys
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Final

import pytest

from handoff_files import HandoffInbox, HandoffStatus, HandoffStore, LocalBlobStore, handoff_checkpoint, load
from handoff_files.compat.sw4rm import HandoffContext, deserialize_context, import_context, serialize_context
from tests.conftest import ROOT

README: Final = ROOT / "README.md"
BASH: Final = shutil.which("bash") or "/bin/bash"
#: The README's folder shared by agents; its paths are moved into the sandbox by this one substitution.
SHARED: Final = "/shared/"
#: The person's edit the stand-in editor makes (a word of the narrative every sandbox thread holds).
EDIT: Final = ("understood", "fixed")
NARRATIVE: Final = "Half the importer is ported. The date bug is understood."
#: The stand-in for a person's editor ($EDITOR, $VISUAL): it makes the edit above to the file it is given.
EDITOR_SCRIPT: Final = f"""#!{sys.executable}
import sys
from pathlib import Path

path = Path(sys.argv[-1])
text = path.read_text(encoding="utf-8")
if {EDIT[0]!r} not in text:
    sys.exit(f"editor: no {EDIT[0]!r} to edit in {{path}}")
path.write_text(text.replace({EDIT[0]!r}, {EDIT[1]!r}, 1), encoding="utf-8")
"""
#: The short agent ``handoff run`` runs: it restores, acknowledges with its briefing's code, saves, exits 0.
RUN_AGENT: Final = """import os
from handoff_files import HandoffStore, brief

store = HandoffStore(os.environ["HANDOFF_DIR"])
restored = store.restore()
store.acknowledge(restored, code=brief(restored).code)
store.save({"state": {"completed_tasks": ["the agent's step"]}, "narrative": "The agent did its step.",
            "decisions": [], "priorities": [], "warnings": []})
print("agent: did its step")
"""
#: What an MCP client sends first: initialize, initialized, a tools/list, each request's answer awaited.
MCP_CLIENT: Final = (
    {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "initialize",
        "params": {
            "protocolVersion": "2025-06-18",
            "capabilities": {},
            "clientInfo": {"name": "readme-test", "version": "1"},
        },
    },
    {"jsonrpc": "2.0", "method": "notifications/initialized"},
    {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
)


# -- README.md's blocks ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Block:
    """One fenced block: its language (empty for a plain one), its text, the README line it starts on."""

    lang: str
    text: str
    line: int  # of its first line of code

    @property
    def key(self) -> str:
        """Its first line without a trailing comment: what the tables below know it by."""
        return command(self.text.splitlines()[0])


def command(line: str) -> str:
    """A line without its trailing comment (``  # …``): what the tables below know a shell line by."""
    return re.sub(r"\s+#\s.*$", "", line).strip()


def readme_blocks() -> list[Block]:
    """Every fenced block of README.md, in order."""
    lines = README.read_text(encoding="utf-8").splitlines()
    blocks, opened, lang = [], 0, ""
    for number, line in enumerate(lines, 1):
        fence = re.fullmatch(r"```(\S*)\s*", line)
        if fence is None:
            continue
        if not opened:
            opened, lang = number, fence.group(1)
        else:
            blocks.append(Block(lang, "\n".join(lines[opened : number - 1]), opened + 1))
            opened = 0
    assert not opened, f"README.md: the block opened on line {opened} is never closed"
    return blocks


def command_lines(found: Block) -> list[tuple[int, str]]:
    """A shell block's lines that run something, as written, each with its README line."""
    lines = enumerate(found.text.splitlines(), found.line)
    return [(number, line) for number, line in lines if command(line) and not line.lstrip().startswith("#")]


def shell_lines() -> list[tuple[int, str]]:
    """Every ``sh`` block's command lines as written, with their README line (a repeated command once)."""
    lines: dict[str, tuple[int, str]] = {}
    for found in readme_blocks():
        for number, line in command_lines(found) if found.lang == "sh" else ():
            lines.setdefault(command(line), (number, line))
    return list(lines.values())


def block(key: str) -> Block:
    """The README block whose first line is *key*."""
    return next(found for found in readme_blocks() if found.key == key)


# -- sandboxes ---------------------------------------------------------------------------------


def saved(thread: Path, generations: int = 5, **store: Any) -> HandoffStore:
    """*thread* with *generations* saves of the README's importer work (its ``ported`` count going up)."""
    handoff = HandoffStore(thread, **store)
    for ported in range(12, 12 + generations):
        handoff.save(
            {
                "state": {"active_tasks": ["port the importer"], "data": {"ported": ported}},
                "narrative": NARRATIVE,
                "decisions": [{"decision": "fix the parser", "reason": "the data is right"}],
                "priorities": [{"task": "port the rest", "urgency": "first"}],
                "warnings": [{"text": "old data holds local times", "severity": "high"}],
            }
        )
    return handoff


def nothing(sandbox: Path) -> None:
    """An empty folder."""


def importer_fix(sandbox: Path) -> None:
    """``threads/importer-fix`` with five generations."""
    saved(sandbox / "threads" / "importer-fix")


def importer_fix_yaml(sandbox: Path) -> None:
    """``threads/importer-fix`` with five generations, its primary ``handoff.yaml``."""
    saved(sandbox / "threads" / "importer-fix", format="yaml")


def edited_by_a_person(sandbox: Path) -> None:
    """The README's line before ``handoff seal``: a person edited the YAML primary."""
    importer_fix_yaml(sandbox)
    primary = sandbox / "threads" / "importer-fix" / "handoff.yaml"
    primary.write_text(primary.read_text(encoding="utf-8").replace(*EDIT, 1), encoding="utf-8")


def signed(thread: Path) -> bool:
    """Whether the thread's newest generation carries a signature."""
    seal = load(thread / "handoff.json").seal
    return seal is not None and seal.signature is not None


def with_content_and_key(sandbox: Path) -> None:
    """The thread and ``content.yaml``, and a signing key at ``keys/agent``, as ``handoff keys create`` makes it."""
    from handoff_files.signing.keys import create_key

    with_content(sandbox)
    create_key(sandbox / "keys" / "agent")


def with_content(sandbox: Path) -> None:
    """The thread, and ``content.yaml``: the five layers a person wrote for the next generation."""
    importer_fix(sandbox)
    (sandbox / "content.yaml").write_text(
        "state:\n  active_tasks: [port the rest]\n  data: {ported: 30}\n"
        "narrative: Most of the importer is ported.\ndecisions: []\n"
        "priorities:\n  - {task: port the rest, urgency: first}\nwarnings: []\n",
        encoding="utf-8",
    )


def with_agent(sandbox: Path) -> None:
    """The thread, and ``agent.py``: a real short agent."""
    importer_fix(sandbox)
    (sandbox / "agent.py").write_text(RUN_AGENT, encoding="utf-8")


def with_a_bad_file(sandbox: Path) -> None:
    """``threads/`` holding the good thread and ``threads/broken``, whose primary has a flipped byte."""
    importer_fix(sandbox)
    (sandbox / "threads" / "broken").mkdir()
    shutil.copy(ROOT / "samples" / "broken" / "v2.0-flipped-byte.json", sandbox / "threads" / "broken" / "handoff.json")


def damaged(sandbox: Path) -> None:
    """The thread with its ``state.json`` lost."""
    importer_fix(sandbox)
    (sandbox / "threads" / "importer-fix" / "state.json").unlink()


def old_run(sandbox: Path) -> None:
    """``threads/old-run``, whose primary is a 1.0 handoff."""
    (sandbox / "threads" / "old-run").mkdir(parents=True)
    shutil.copy(ROOT / "samples" / "v1.0" / "coding-task.json", sandbox / "threads" / "old-run" / "handoff.json")


def t1(sandbox: Path) -> None:
    """``threads/t1`` with one generation."""
    saved(sandbox / "threads" / "t1", generations=1)


def exported(sandbox: Path) -> None:
    """``threads/t1`` exported to the shared blob store, its descriptor in ``d.json``."""
    t1(sandbox)
    blobs = LocalBlobStore(sandbox / "shared" / "blobs")
    descriptor = handoff_checkpoint(sandbox / "threads" / "t1", blobs=blobs, to_agent="beta")
    (sandbox / "d.json").write_text(descriptor.to_json(), encoding="utf-8")


def requested(sandbox: Path) -> None:
    """A request from alpha to beta in the shared inbox, its id starting 5f0c1a2b as the README's line has it."""
    exported(sandbox)
    made = uuid.UUID("5f0c1a2b" + uuid.uuid4().hex[8:])
    with pytest.MonkeyPatch.context() as patch:  # the one id the README names; the inbox draws uuid4s
        patch.setattr(uuid, "uuid4", lambda: made)
        HandoffInbox(sandbox / "shared" / "inbox").request_handoff(
            "alpha", "beta", "needs SQL", descriptor=(sandbox / "d.json").read_text(encoding="utf-8"), timeout=600
        )


CONTEXT: Final = HandoffContext(
    conversation_history=[{"role": "user", "content": "port the importer"}], tool_state={"step": 3}
)


def with_context_bin(sandbox: Path) -> None:
    """``threads/t1``, and ``context.bin``: SW4RM's serialize_context bytes."""
    t1(sandbox)
    (sandbox / "context.bin").write_bytes(serialize_context(CONTEXT))


def t1_with_context(sandbox: Path) -> None:
    """``threads/t1`` whose newest generation has a context block."""
    t1(sandbox)
    import_context(serialize_context(CONTEXT), sandbox / "threads" / "t1")


def project(sandbox: Path) -> None:
    """A project whose thread (``.handoff/main``, where the hooks look) has a saved handoff."""
    saved(sandbox / ".handoff" / "main", generations=1)


def graphs(sandbox: Path) -> None:
    """``graphs/``: the README's LangGraph example, run here."""
    with contextlib.chdir(sandbox):
        run_blocks([block(LANGGRAPH)], {})


def session_start(sandbox: Path) -> str:
    """Claude Code's SessionStart event for a session in *sandbox*."""
    event = {
        "session_id": "readme-1",
        "transcript_path": str(sandbox / "transcript.jsonl"),
        "cwd": str(sandbox),
        "hook_event_name": "SessionStart",
        "source": "startup",
    }
    return json.dumps(event)


# -- what some lines must have done, beyond their exit code ----------------------------------

Done = subprocess.CompletedProcess[str]


def generation(sandbox: Path, thread: str = "threads/importer-fix") -> int:
    """The generation *thread* restores to."""
    return HandoffStore(sandbox / thread).restore().generation


def last_line(sandbox: Path, thread: str = "threads/importer-fix") -> bytes:
    """The last line of *thread*'s journal."""
    return (sandbox / thread / "journal.jsonl").read_bytes().splitlines()[-1]


def narrative(sandbox: Path) -> str:
    """The narrative ``threads/importer-fix`` restores to."""
    return HandoffStore(sandbox / "threads" / "importer-fix").restore().handoff.narrative


def briefed(sandbox: Path, done: Done) -> bool:
    """The session start's answer carries the briefing."""
    return NARRATIVE in json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]


def served(sandbox: Path, done: Done) -> bool:
    """The server answered the client's initialize and tools/list."""
    answers = {answer["id"]: answer for answer in map(json.loads, done.stdout.splitlines())}
    return "handoff_save" in {tool["name"] for tool in answers[2]["result"]["tools"]}


def wrong_code(sandbox: Path, done: Done) -> bool:
    """Refused for its code, as the comment says."""
    return "is not the acknowledgement code" in done.stderr


def one_bad_file(sandbox: Path, done: Done) -> bool:
    """One line, naming the bad file."""
    return done.stderr.startswith(f"handoff: {sandbox}/threads/broken/handoff.json: ") and done.stderr.count("\n") == 1


@dataclass(frozen=True, slots=True)
class Line:
    """How one README shell line is run: its sandbox, its exit code, its stdin, what it must have done."""

    prepare: Callable[[Path], None]
    status: int = 0  # the exit code its comment gives
    stdin: Callable[[Path], str] | None = None  # what a client sends on stdin, given the sandbox; then it is closed
    client: tuple[dict[str, Any], ...] = ()  # a client's messages, each request's answer awaited; then stdin closed
    tty: bytes | None = None  # a terminal as stdin, with what the person types waiting in it
    check: Callable[[Path, Done], bool] | None = None  # what it must have done


#: Every README shell line, by its command (its comment left out), and how it is run.
SHELL: Final[dict[str, Line]] = {
    # take a thread over
    "handoff show threads/importer-fix": Line(importer_fix),
    "handoff log threads/importer-fix": Line(importer_fix),
    "handoff history threads/importer-fix": Line(importer_fix),
    "handoff diff threads/importer-fix": Line(importer_fix),
    "handoff show threads/importer-fix --generation 3": Line(importer_fix),
    "handoff log threads/importer-fix -n 20 --since 2h": Line(importer_fix),
    "handoff brief threads/importer-fix --budget 4000": Line(importer_fix),
    # work on it
    "handoff init threads/importer-fix": Line(
        nothing, check=lambda s, _: (s / "threads" / "importer-fix" / "history").is_dir()
    ),
    "handoff save threads/importer-fix content.yaml": Line(with_content, check=lambda s, _: generation(s) == 6),
    # the full save: its own history/ file is the commit point, so its journal line carries no document
    "handoff save threads/importer-fix content.yaml --durability full": Line(
        with_content,
        check=lambda s, _: generation(s) == 6 and b'"durability":"journal"' not in last_line(s),
    ),
    # a person at a terminal; $EDITOR and $VISUAL make a real edit
    "handoff edit threads/importer-fix": Line(importer_fix, tty=b"", check=lambda s, _: EDIT[1] in narrative(s)),
    "handoff set threads/importer-fix state.data.ported=40 'state.active_tasks+=port the rest'": Line(
        importer_fix, check=lambda s, _: generation(s) == 6
    ),
    "$EDITOR threads/importer-fix/handoff.yaml": Line(
        importer_fix_yaml,
        tty=b"",
        check=lambda s, _: EDIT[1] in (s / "threads" / "importer-fix" / "handoff.yaml").read_text(),
    ),
    # the line before it made the edit; were the primary unchanged since sealing, it would ask, and the person says y
    "handoff seal threads/importer-fix": Line(
        edited_by_a_person, tty=b"y\n", check=lambda s, _: EDIT[1] in narrative(s) and generation(s) == 6
    ),
    "handoff run threads/importer-fix -- python agent.py": Line(with_agent, check=lambda s, _: generation(s) == 6),
    # the README's code is an example: not this thread's, so "a wrong code: exit 1"
    "handoff acknowledge threads/importer-fix K7Q2-M6XD": Line(importer_fix, status=1, check=wrong_code),
    # fix it: "exit 1, one line per bad file" (threads/broken has a flipped byte)
    "handoff validate threads/*": Line(with_a_bad_file, status=1, check=one_bad_file),
    "handoff doctor threads/importer-fix --repair": Line(
        damaged, check=lambda s, _: (s / "threads" / "importer-fix" / "state.json").is_file()
    ),
    "handoff prune threads/importer-fix --keep 3 --dry-run": Line(importer_fix),
    # the key as ssh-keygen would read it, private, and the line for allowed_signers printed
    "handoff keys create keys/agent --principal agent@ci": Line(
        nothing,
        check=lambda s, done: (
            (s / "keys" / "agent").stat().st_mode & 0o777 == 0o600
            and 'agent@ci namespaces="handoff-files" ssh-ed25519 ' in done.stdout
        ),
    ),
    "handoff save threads/importer-fix content.yaml --sign-with keys/agent": Line(
        with_content_and_key,
        check=lambda s, done: "signed by SHA256:" in done.stdout and signed(s / "threads" / "importer-fix"),
    ),
    "handoff verify threads/importer-fix": Line(
        importer_fix, check=lambda _, done: done.stdout.rstrip().endswith("the chain holds")
    ),
    "handoff migrate threads/old-run --dry-run": Line(old_run),
    "handoff migrate threads/old-run": Line(
        old_run, check=lambda s, _: load(s / "threads" / "old-run" / "handoff.json").schema_version == "2.1"
    ),
    # hand it on
    "handoff export threads/t1 --to beta --blobs /shared/blobs > d.json": Line(
        t1, check=lambda s, _: json.loads((s / "d.json").read_text())["to_agent"] == "beta"
    ),
    "handoff adopt d.json threads/beta-t1 --blobs /shared/blobs": Line(
        exported, check=lambda s, _: generation(s, "threads/beta-t1") == 1
    ),
    (
        'handoff inbox /shared/inbox request --from alpha --to beta --reason "needs SQL" '
        "--descriptor d.json --timeout 600"
    ): Line(exported, check=lambda s, _: len(HandoffInbox(s / "shared/inbox").get_pending_handoffs("beta")) == 1),
    "handoff inbox /shared/inbox list --agent beta": Line(requested, check=lambda _, done: "5f0c1a2b" in done.stdout),
    "handoff inbox /shared/inbox accept 5f0c1a2b": Line(
        requested,
        check=lambda s, _: (
            [r.status for r in HandoffInbox(s / "shared" / "inbox").list_handoffs()] == [HandoffStatus.ACCEPTED]
        ),
    ),
    "handoff import --from sw4rm threads/t1 context.bin": Line(
        with_context_bin,
        check=lambda s, _: HandoffStore(s / "threads" / "t1").restore().handoff.context is not None,
    ),
    "handoff export-context --to sw4rm threads/t1 -o context.bin": Line(
        t1_with_context, check=lambda s, _: deserialize_context((s / "context.bin").read_bytes()) == CONTEXT
    ),
    # agents and their tools
    "handoff install claude-code --project .": Line(nothing, check=lambda s, _: (s / ".mcp.json").is_file()),
    # a session start, as Claude Code sends it
    "handoff hook claude-code": Line(project, stdin=session_start, check=briefed),
    "handoff mcp --thread threads/importer-fix": Line(importer_fix, client=MCP_CLIENT, check=served),
    "handoff prune graphs --keep 20 --dry-run": Line(graphs),
    'eval "$(handoff completion bash)"': Line(nothing),
    "cat graphs/chat-1/handoff.json": Line(graphs),
    "handoff show graphs/chat-1": Line(graphs),
}

#: README shell lines not run here, and why.
NOT_RUN: Final[dict[str, str]] = {
    "make demo": "its set-up made the venv this test runs in; tests/test_demo.py runs samples/demo.py, its demo",
    "make test": "it runs this test (and CI's .ci/run runs it on a clean clone)",
    "pip install 'handoff-files[mcp]'": (
        "it installs from the package registry; the test venv has the [mcp] extra, and `make installed` "
        "(.ci/installed) installs the wheel with its extras in a fresh venv"
    ),
}

#: Plain (no language) blocks: not code.
TEXT: Final[dict[str, str]] = {
    "threads/importer-fix/": "the on-disk layout, not code: test_the_on_disk_block_lists_what_a_save_writes checks it",
}

LIBRARY: Final = "from handoff_files import HandoffStore, NoHandoffError"
WATCH: Final = "from handoff_files import watch"
KILL_TEST: Final = "def test_survives_kills(handoff_killer):"
HAND_ON: Final = "from handoff_files import LocalBlobStore, adopt_checkpoint, handoff_checkpoint"
INBOX: Final = "from handoff_files import AgentRegistry, HandoffInbox, HandoffStatus"
LANGGRAPH: Final = "from langgraph.graph import MessagesState, StateGraph, START"
#: run against the tests' SeaweedFS by tests/storage/test_bucket_demo.py (its bucket and credentials are there)
BUCKET: Final = "from handoff_files import HandoffStore"
#: Every python block: those run below in a sandbox by its test, and the kill test (run by pytest).
PYTHON: Final = {LIBRARY, WATCH, KILL_TEST, HAND_ON, INBOX, LANGGRAPH, BUCKET}


# -- the tests ---------------------------------------------------------------------------------


def test_every_readme_example_is_run_or_named() -> None:
    """A block or a shell line nobody taught this file fails here, as does an entry for one the README lost."""
    unknown, seen = [], set()
    for found in readme_blocks():
        if found.lang == "python":
            keys, known = [(found.line, found.key)], PYTHON
        elif found.lang == "sh":
            keys, known = [(n, command(line)) for n, line in command_lines(found)], SHELL.keys() | NOT_RUN.keys()
        elif not found.lang:
            keys, known = [(found.line, found.key)], set(TEXT)
        else:
            unknown.append(f"line {found.line}: a ```{found.lang} block (this file runs python and sh, names plain)")
            continue
        if found.lang != "sh" and found.key in seen:  # a block is found by its first line: two would hide one
            unknown.append(f"line {found.line}: a second block starting {found.key!r}")
        seen |= {key for _, key in keys}
        unknown += [f"line {n}: {key!r}" for n, key in keys if key not in known]
    assert not unknown, (
        "README.md examples tests/test_readme.py neither runs nor names: add each to SHELL (with the sandbox it "
        "needs), NOT_RUN or TEXT (with the reason), or a python block to PYTHON and a test that runs it:\n"
        + "\n".join(unknown)
    )
    stale = sorted((PYTHON | SHELL.keys() | NOT_RUN.keys() | TEXT.keys()) - seen)
    assert not stale, f"tests/test_readme.py knows examples README.md no longer has: remove {stale}"


def test_an_example_nobody_taught_this_file_fails_the_check(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """New blocks, lines and first lines fail the check above by name; so does a known line the README lost."""
    readme, original = tmp_path / "README.md", README.read_text(encoding="utf-8")
    monkeypatch.setattr(sys.modules[__name__], "README", readme)
    changed = original.replace(f"```python\n{WATCH}", "```python\nimport handoff_files", 1)
    readme.write_text(changed + "```sh\nhandoff frob x  # new\n```\n```python\nprint(1)\n```\n```toml\n```\n")
    with pytest.raises(AssertionError) as caught:
        test_every_readme_example_is_run_or_named()
    for said in ("'handoff frob x'", "'print(1)'", "a ```toml block", "'import handoff_files'"):
        assert said in str(caught.value)
    readme.write_text(re.sub(r"(?m)^handoff diff threads/importer-fix .*\n", "", original, count=1))
    with pytest.raises(AssertionError, match="no longer has: remove \\['handoff diff threads/importer-fix'\\]"):
        test_every_readme_example_is_run_or_named()


@pytest.fixture
def sandbox(tmp_path: Path) -> Path:
    """The folder an example runs in (the README's relative paths start here)."""
    folder = tmp_path / "sandbox"
    folder.mkdir()
    return folder


@pytest.fixture
def editor(tmp_path: Path) -> Path:
    """The person's editor for $EDITOR and $VISUAL: it makes a real edit to the file it gets."""
    script = tmp_path / "editor"
    script.write_text(EDITOR_SCRIPT, encoding="utf-8")
    script.chmod(0o700)
    return script


def bash(line: str, sandbox: Path, how: Line, editor: Path) -> Done:
    """Run *line* as written with bash in *sandbox*, the installed ``handoff`` first on PATH."""
    env = {name: value for name, value in os.environ.items() if name not in ("HANDOFF_INBOX", "HANDOFF_BLOBS")}
    env |= {"PATH": f"{Path(sys.executable).parent}{os.pathsep}{env['PATH']}", "EDITOR": str(editor)}
    env["VISUAL"] = str(editor)
    argv = [BASH, "-c", line.replace(SHARED, f"{sandbox}{SHARED}")]
    if how.client:
        return converse(argv, sandbox, env, how.client)
    leader, follower = pty.openpty() if how.tty is not None else (None, None)
    try:
        if leader is not None and how.tty:
            os.write(leader, how.tty)
        return subprocess.run(
            argv,
            cwd=sandbox,
            env=env,
            input=None if follower is not None else how.stdin(sandbox) if how.stdin else "",
            stdin=follower,
            capture_output=True,
            text=True,
            timeout=60,
            check=False,
        )
    finally:
        for fd in (leader, follower):
            if fd is not None:
                os.close(fd)


def converse(argv: list[str], sandbox: Path, env: dict[str, str], messages: tuple[dict[str, Any], ...]) -> Done:
    """Talk to a server over its stdin and stdout as a client does: await each request's answer, then close stdin."""
    heard = []
    with subprocess.Popen(
        argv, cwd=sandbox, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    ) as server:
        assert server.stdin is not None
        assert server.stdout is not None
        stop = threading.Timer(60, server.kill)  # a server that never answers fails the test instead of hanging it
        stop.start()
        try:
            for message in messages:
                server.stdin.write(json.dumps(message) + "\n")
                server.stdin.flush()
                while "id" in message and (answer := server.stdout.readline()):
                    heard.append(answer)
                    if json.loads(answer).get("id") == message["id"]:
                        break
            out, err = server.communicate(timeout=60)  # closes stdin: the client is done
        finally:
            stop.cancel()
    return subprocess.CompletedProcess(argv, server.returncode, "".join(heard) + out, err)


def shell_params() -> list[Any]:
    """The README's shell lines as test cases: those in NOT_RUN skipped with their reason."""
    cases = []
    for number, line in shell_lines():
        why = NOT_RUN.get(command(line))
        marks = [] if why is None else [pytest.mark.skip(reason=f"not run here: {why}")]
        cases.append(pytest.param(line, id=f"line {number}: {command(line)}", marks=marks))
    return cases


@pytest.mark.parametrize("line", shell_params())
def test_each_shell_line_runs_as_written(line: str, sandbox: Path, editor: Path) -> None:
    """Each README shell line exits 0 (or the code its comment gives) and does what it says."""
    how = SHELL.get(command(line))
    assert how is not None, f"README.md's {command(line)!r} is not in SHELL: say how it is run"
    how.prepare(sandbox)
    done = bash(line, sandbox, how, editor)
    said = f"{line}\nexit {done.returncode}\nstdout: {done.stdout}\nstderr: {done.stderr}"
    assert done.returncode == how.status, said
    assert "Traceback" not in done.stderr, said
    if how.check is not None:
        assert how.check(sandbox, done), said


def run_blocks(blocks: list[Block], namespace: dict[str, Any]) -> None:
    """Run python *blocks* as written in one namespace, in the working directory; tracebacks name README lines."""
    for found in sorted(blocks, key=lambda b: b.line):
        code = "\n" * (found.line - 1) + found.text.replace(SHARED, f"{Path.cwd()}{SHARED}")
        exec(compile(code, str(README), "exec"), namespace)  # noqa: S102 -- running the README's example is the test


def test_the_library_example_starts_fresh_then_resumes(
    sandbox: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.chdir(sandbox)
    run_blocks([block(LIBRARY)], {})
    assert capsys.readouterr().out.startswith("fresh start\n1 ")
    run_blocks([block(LIBRARY)], {})  # the agent's restart
    assert capsys.readouterr().out.startswith("resuming generation 1 from the primary\n2 ")


def test_the_watch_example_runs_on_a_saved_thread(sandbox: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    importer_fix(sandbox)
    monkeypatch.chdir(sandbox)
    namespace: dict[str, Any] = {}
    run_blocks([block(WATCH)], namespace)
    assert namespace["watcher"].current.generation == 5


def test_the_hand_on_and_inbox_examples_run_in_one_namespace(sandbox: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The inbox example continues the hand-on one (its ``descriptor``)."""
    saved(sandbox / "threads" / "alpha", generations=1)
    agents = {"alpha": {"scope": ["sql"]}, "beta": {"capabilities": ["sql"]}}
    (sandbox / "agents.json").write_text(json.dumps({"agents": agents}), encoding="utf-8")
    monkeypatch.chdir(sandbox)
    namespace: dict[str, Any] = {}
    run_blocks([block(HAND_ON), block(INBOX)], namespace)
    assert generation(sandbox, "threads/beta-from-alpha") == 1
    assert namespace["request"].status is HandoffStatus.PENDING


def test_the_langgraph_example_writes_a_readable_checkpoint(sandbox: Path) -> None:
    graphs(sandbox)
    assert json.loads((sandbox / "graphs" / "chat-1" / "handoff.json").read_bytes())["generation"] >= 1


@pytest.mark.slow  # make slow: the same example file passes 20 kills in tests/run/test_plugin.py
def test_the_kill_test_example_passes_against_the_steps_agent(sandbox: Path) -> None:
    """Written into a test file beside ``agent.py`` (the README's steps agent) and run by pytest, as an author would."""
    shutil.copy(ROOT / "samples" / "steps_agent.py", sandbox / "agent.py")
    (sandbox / "test_agent.py").write_text(block(KILL_TEST).text + "\n", encoding="utf-8")
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}"}
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "test_agent.py"],
        cwd=sandbox,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 passed" in done.stdout, done.stdout


def test_the_on_disk_block_lists_what_a_save_writes(sandbox: Path) -> None:
    """Not code, but its names are what a saved thread holds."""
    listed = {line.split()[0].rstrip("/") for line in block("threads/importer-fix/").text.splitlines()[1:]}
    importer_fix(sandbox)
    thread = sandbox / "threads" / "importer-fix"
    assert listed == {path.name for path in thread.iterdir()}
    assert all(re.fullmatch(r"\d{8}\.json", path.name) for path in (thread / "history").iterdir())
