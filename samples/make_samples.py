"""The sample generator: one coding task told in formats 0.8, 1.0, 2.0 and 2.1, and the broken cases.

Usage: ``python samples/make_samples.py [OUT_DIR] [--refresh]`` (OUT_DIR defaults to ``samples/``).

The story is a CSV importer being ported from python-dateutil to the ``whenever`` date library
over several sessions: session 2 wrote a 0.8 handoff, session 5 a 1.0 one, session 8 a sealed 2.0
one and the same content sealed and signed as 2.1 (JSON, and YAML with a person's comments). The
legacy files are written exactly as their old writers did (``json.dumps(handoff, indent=2)``, a
16-hex sha256 of the state), from fixed data, so a re-run gives the same bytes.

A sealed file carries the moment it was sealed, so it is made once with the library and then kept:
the 2.0 samples for good (this library writes 2.1 now; they are what a 2.0 writer left), the 2.1
samples until ``--refresh`` (or an OUT_DIR without them) seals and signs new ones. A re-run derives
the broken cases from the kept files. The 2.1 samples are signed by ``keys/sample-signer``, a key
made for the samples and published with them on purpose: never trust it for anything else.

``broken/expected.json`` maps each broken file to the error ``handoff_files.load`` must raise and
a fragment its message must contain.
"""

from __future__ import annotations

import argparse
import copy
import hashlib
import json
import sys
import tempfile
from pathlib import Path
from typing import Any, Final, Literal, NotRequired, TypedDict

from handoff_files import HandoffStore, load
from handoff_files.signing.keys import allowed_signers_line, create_key, load_signing_key

Format = Literal["json", "yaml"]

SAMPLES: Final = Path(__file__).resolve().parent
NAME: Final = "coding-task"
AGENT_ID: Final = "importer-agent"
THREAD_ID: Final = "importer-port"
SIGNER: Final = "importer-agent@samples.invalid"  # the 2.1 samples' signer, as keys/allowed_signers names it


class LegacyState(TypedDict):
    """The ``state`` layer as the 0.8 and 1.0 writers filled it."""

    session_id: int
    timestamp: str
    active_tasks: list[str]
    completed_tasks: list[str]
    blocked_tasks: list[str]
    environment: dict[str, str]
    error_count: int
    energy_level: float


class Decision10(TypedDict):
    """A 1.0 decision."""

    decision: str
    reason: str
    alternatives_considered: NotRequired[list[str]]
    reversible: NotRequired[bool]
    status: NotRequired[Literal["decided", "deferred", "reversed"]]


class Priority10(TypedDict):
    """A 1.0 priority."""

    task: str
    urgency: Literal["first", "primary", "after_primary", "if_time_permits"]


class Handoff10(TypedDict):
    """A 1.0 handoff, keys in the order its writer put them."""

    schema_version: Literal["1.0"]
    session_id: int
    created_at: str
    state: LegacyState
    narrative: str
    decisions: list[Decision10]
    priorities: list[Priority10]
    warnings: list[str]
    checksum: str


class Handoff08(TypedDict):
    """A 0.8 handoff, keys in the order its writer put them."""

    schema_version: Literal["0.8"]
    session: int
    timestamp: str
    state: LegacyState
    summary: str
    decisions: list[str]
    todo: list[str]
    warnings: list[str]
    checksum: str


class Expected(TypedDict):
    """What loading a broken sample must raise: a HandoffError subclass and a fragment of its message."""

    error: str
    contains: str


# -- the story ------------------------------------------------------------------------------

FIXTURE: Final = "fixtures/zoë-export.csv"  # a non-ASCII file name, on purpose: it is part of the story
BLOCKED_ON_TZDATA: Final = "DST regression tests: the CI image lacks tzdata 2025b (ticket OPS-412)"
DEFER_FALLBACK: Final = "Keep dateutil as a fallback parser for the free-form 'notes' column"
ENVIRONMENT: Final = {
    "python": "3.11.9",
    "branch": "port/whenever-dates",
    "TZ": "Europe/Berlin",
    "whenever": "0.6.9",
    "dateutil": "2.9.0.post0",
}


def legacy_checksum(state: LegacyState | dict[str, Any]) -> str:
    """Return the 0.8/1.0 checksum: the first 16 hex digits of sha256 over ``json.dumps(state, sort_keys=True)``."""
    return hashlib.sha256(json.dumps(state, sort_keys=True).encode("utf-8")).hexdigest()[:16]


def v08_sample() -> Handoff08:
    """Session 2: the port has started; written by the 0.8 writer."""
    state: LegacyState = {
        "session_id": 2,
        "timestamp": "2026-11-04T16:38:51.204117",
        "active_tasks": [
            "replace dateutil.parser.parse in importer/rows.py",
            f"write golden tests from {FIXTURE}",
        ],
        "completed_tasks": [
            "inventory dateutil calls in importer/ (14 call sites)",
            "add whenever 0.6 to requirements.txt",
        ],
        "blocked_tasks": [BLOCKED_ON_TZDATA],
        "environment": dict(ENVIRONMENT),
        "error_count": 3,
        "energy_level": 0.7,
    }
    return {
        "schema_version": "0.8",
        "session": 2,
        "timestamp": "2026-11-04T16:41:09.573018",
        "state": state,
        "summary": (
            "Second session on the dateutil → whenever port of the CSV importer. All 14 dateutil call "
            "sites are listed in PORTING.md; rows.py is half done and its tests pass for ISO dates but "
            "not yet for the dd.mm.yyyy rows in Zoë's export. The DST tests cannot run until the CI image "
            "has tzdata 2025b."
        ),
        "decisions": [
            "Parse row dates as whenever.PlainDateTime: the CSV holds naïve local times and the importer "
            "must not guess a zone",
            "Deferred: whether to keep dateutil as a fallback for the free-form 'notes' column, until Zoë says "
            "whether anything parses it",
        ],
        "todo": [
            "finish rows.py: dd.mm.yyyy rows from the EU export",
            f"golden tests from {FIXTURE}",
            "port importer/summary.py",
            "remove dateutil from requirements.txt",
        ],
        "warnings": [
            "dateutil reads '03/04/2026' as 3 March; whenever refuses ambiguous dates. Do not paper over "
            "it with a dayfirst flag: the export's format is fixed per source",
            f"{FIXTURE} has a non-ASCII name; the Windows runner's checkout mangles it",
        ],
        "checksum": legacy_checksum(state),
    }


def v10_sample() -> Handoff10:
    """Session 5: rows.py is ported, summary.py is in progress; written by the 1.0 writer."""
    state: LegacyState = {
        "session_id": 5,
        "timestamp": "2026-11-12T11:20:02.990431",
        "active_tasks": [
            "port importer/summary.py (weekly totals use dateutil.relativedelta)",
            "remove dateutil from requirements.txt",
        ],
        "completed_tasks": [
            "inventory dateutil calls in importer/ (14 call sites)",
            "add whenever 0.6 to requirements.txt",
            "replace dateutil.parser.parse in importer/rows.py",
            f"write golden tests from {FIXTURE}",
        ],
        "blocked_tasks": [
            BLOCKED_ON_TZDATA,
            "decide on the notes-column fallback: waiting for Zoë's answer in #imports",
        ],
        "environment": dict(ENVIRONMENT),
        "error_count": 1,
        "energy_level": 0.55,
    }
    return {
        "schema_version": "1.0",
        "session_id": 5,
        "created_at": "2026-11-12T11:22:47.118204",
        "state": state,
        "narrative": (
            "rows.py now parses every date through whenever, and the golden tests from Zoë's export pass, "
            "including the dd.mm.yyyy rows. summary.py is next: its weekly totals lean on "
            "dateutil.relativedelta, which has no one-line equivalent. The DST tests are still blocked on "
            "the CI image. Nothing is merged yet; the branch is rebased on main as of this morning."
        ),
        "decisions": [
            {
                "decision": "Parse row dates as whenever.PlainDateTime",
                "reason": "The CSV holds naïve local times; attaching a zone would be a guess",
                "alternatives_considered": ["ZonedDateTime in Europe/Berlin", "keep dateutil's naive datetimes"],
                "reversible": True,
                "status": "decided",
            },
            {
                "decision": DEFER_FALLBACK,
                "reason": "Only Zoë knows whether anything downstream parses the notes; asked, no answer yet",
                "alternatives_considered": ["drop the fallback now", "parse notes with whenever and log failures"],
                "reversible": True,
                "status": "deferred",
            },
            {
                "decision": "Read the EU export with a dayfirst flag",
                "reason": "Reversed: the export's format is fixed per source, so each source names its format",
                "reversible": True,
                "status": "reversed",
            },
            {
                "decision": "Pin whenever to 0.6.x",
                "reason": "0.7 renames PlainDateTime; upgrade in its own change",
            },
        ],
        "priorities": [
            {"task": "port the weekly totals in importer/summary.py", "urgency": "first"},
            {"task": "remove dateutil from requirements.txt and the lock file", "urgency": "primary"},
            {"task": "run the DST tests once OPS-412 is done", "urgency": "after_primary"},
            {"task": "drop the '# TODO dateutil' comments in importer/", "urgency": "if_time_permits"},
        ],
        "warnings": [
            "relativedelta(months=+1) clamps 31 January to 28/29 February; whenever's add(months=1) does too, "
            "but summary.py's tests only cover mid-month dates",
            f"{FIXTURE} has a non-ASCII name; the Windows runner's checkout mangles it",
        ],
        "checksum": legacy_checksum(state),
    }


def v20_content() -> dict[str, Any]:
    """Session 8: the port is nearly done; the five layers and a context block, as an agent passes them to save()."""
    return {
        "state": {
            "session_id": 8,
            "timestamp": "2026-11-20T17:45:12.003981+01:00",
            "active_tasks": ["remove dateutil from requirements.txt and the lock file"],
            "completed_tasks": [
                "inventory dateutil calls in importer/ (14 call sites)",
                "add whenever 0.6 to requirements.txt",
                "replace dateutil.parser.parse in importer/rows.py",
                f"write golden tests from {FIXTURE}",
                "port importer/summary.py (weekly totals use dateutil.relativedelta)",
            ],
            "blocked_tasks": [BLOCKED_ON_TZDATA],
            "environment": dict(ENVIRONMENT),
            "error_count": 0,
            "energy_level": 0.8,
            "data": {"dateutil_call_sites_left": 0, "fixture_rows": 1204, "tests": {"passed": 212, "skipped": 4}},
        },
        "narrative": (
            "The importer no longer calls dateutil: rows.py and summary.py both use whenever, and all 212 "
            "tests pass (4 DST tests skipped). What is left is removing the dependency itself and running "
            "the DST tests once the CI image has tzdata 2025b. Zoë has not yet said whether the notes column "
            "is parsed downstream, so the dateutil fallback stays deferred."
        ),
        "decisions": [
            {
                "decision": "Parse row dates as whenever.PlainDateTime",
                "reason": "The CSV holds naïve local times; attaching a zone would be a guess",
                "alternatives_considered": ["ZonedDateTime in Europe/Berlin", "keep dateutil's naive datetimes"],
                "reversible": True,
                "status": "decided",
            },
            {
                "decision": DEFER_FALLBACK,
                "reason": "Only Zoë knows whether anything downstream parses the notes; asked twice, no answer",
                "alternatives_considered": ["drop the fallback now", "parse notes with whenever and log failures"],
                "reversible": True,
                "status": "deferred",
            },
            {
                "decision": "Month arithmetic in summary.py uses whenever's add(months=…)",
                "reason": "Same end-of-month clamping as relativedelta; new tests cover 31 January",
                "reversible": False,
                "status": "decided",
            },
        ],
        "priorities": [
            {"task": "remove dateutil from requirements.txt and the lock file", "urgency": "first"},
            {"task": "open the pull request and ask Zoë for review", "urgency": "primary"},
            {"task": "run the DST tests once OPS-412 is done", "urgency": "after_primary"},
            {"task": "drop the '# TODO dateutil' comments in importer/", "urgency": "if_time_permits"},
        ],
        "warnings": [
            {
                "text": "The lock file still pins python-dateutil through pandas; remove only the direct pin",
                "severity": "high",
            },
            {"text": f"{FIXTURE} has a non-ASCII name; the Windows runner's checkout mangles it", "severity": "low"},
        ],
        "context": {
            "conversation_history": [
                {
                    "role": "user",
                    "content": "Can the importer drop dateutil this week?",
                    "timestamp": "2026-11-20T16:02:44+01:00",
                },
                {
                    "role": "assistant",
                    "content": "Yes, except the DST tests, which wait on OPS-412.",
                    "timestamp": "2026-11-20T16:03:10+01:00",
                },
            ],
            "tool_state": {"last_test_run": {"command": "pytest -q", "passed": 212, "failed": 0, "skipped": 4}},
            "metadata": {"ticket": "IMP-88", "reviewer": "Zoë Nakamura"},
        },
    }


# -- writing --------------------------------------------------------------------------------


#: The 1.0 sample shaped as the five-layer write-up's own example is: statuses and urgencies in
#: capitals, decisions with only ``decision``, ``reason`` and ``status``.
WRITEUP: Final = "writeup-example"


def v10_writeup_sample() -> dict[str, Any]:
    """A 1.0 handoff as the widely read write-up spells it (upper-case statuses), from fixed data."""
    state: dict[str, Any] = {
        "session_id": 3,
        "timestamp": "2026-10-02T09:14:00",
        "active_tasks": ["write the migration for the orders table"],
        "completed_tasks": ["read the legacy schema", "list the foreign keys"],
        "blocked_tasks": [],
        "environment": {"db": "staging"},
        "error_count": 0,
        "energy_level": 0.8,
    }
    return {
        "schema_version": "1.0",
        "session_id": 3,
        "created_at": "2026-10-02T09:15:30",
        "state": state,
        "narrative": (
            "The legacy schema is mapped and every foreign key is listed. The orders migration is next; "
            "the archive tables wait for a decision on retention."
        ),
        "decisions": [
            {"decision": "Migrate orders first", "reason": "Every other table refers to it", "status": "DECIDED"},
            {"decision": "Keep the archive tables", "reason": "Retention policy not yet known", "status": "DEFERRED"},
            {"decision": "Batch the copy by month", "reason": "Waiting on the DBA's review", "status": "PENDING"},
        ],
        "priorities": [
            {"task": "write the orders migration", "urgency": "FIRST"},
            {"task": "ask about archive retention", "urgency": "After_Primary"},
        ],
        "warnings": ["staging is shared with the reporting team between 02:00 and 04:00 UTC"],
        "checksum": legacy_checksum(state),
    }


def dump_legacy(document: Handoff10 | Handoff08 | dict[str, Any]) -> bytes:
    """Render a legacy document as its writer did: ``json.dumps(handoff, indent=2)``, no final newline."""
    return json.dumps(document, indent=2).encode("utf-8")


# a person's notes on the YAML sample, put above top-level keys: comments do not count in the seal
YAML_COMMENTS: Final = {
    "narrative": "# Zoë: read this first. The port is done bar the dependency itself.",
    "warnings": "# Both warnings still hold as of session 8.",
    "state": "# Facts as of the end of session 8; error_count went to 0 after the summary.py fix.",
    "decisions": "# The notes-column fallback stays deferred until Zoë answers (see narrative).",
    "context": "# The last two turns of the chat, kept for the next session.",
}
YAML_TRAILING: Final = {"priorities:": "priorities:  # in order: do the first one first"}


def annotate_yaml(data: bytes) -> bytes:
    """Add a person's comments to a rendered 2.0 YAML handoff (at top-level keys only, so no value changes)."""
    lines = []
    for line in data.decode("utf-8").splitlines():
        key, colon, _ = line.partition(":")
        if colon and key in YAML_COMMENTS:  # a top-level key: no indent, so the key is the whole prefix
            lines.append(YAML_COMMENTS[key])
        lines.append(YAML_TRAILING.get(line, line))
    return "".join(f"{line}\n" for line in lines).encode("utf-8")


def sample_keys(out: Path) -> dict[Path, bytes]:
    """The samples' signing key, its public line and an ``allowed_signers`` naming it: kept when present
    under *out* (or in ``samples/``), else made anew."""
    keys = out / "keys"
    for source in (keys, SAMPLES / "keys"):
        private = source / "sample-signer"
        if private.is_file():
            return {keys / p.name: p.read_bytes() for p in sorted(source.iterdir()) if p.is_file()}
    with tempfile.TemporaryDirectory(prefix="handoff-samples-") as tmp:
        key = create_key(Path(tmp) / "sample-signer", comment=SIGNER)
        line = allowed_signers_line(key, SIGNER) + "\n"
        return {
            keys / "sample-signer": key.path.read_bytes(),
            keys / "sample-signer.pub": key.path.with_name("sample-signer.pub").read_bytes(),
            keys / "allowed_signers": line.encode("utf-8"),
        }


def seal_v21(fmt: Format, private_key: bytes) -> bytes:
    """Seal and sign the session-8 content with the library; return the primary's bytes (YAML with comments).

    :raises RuntimeError: if the commented YAML no longer loads as the same handoff.
    """
    with tempfile.TemporaryDirectory(prefix="handoff-samples-") as tmp:
        key_file = Path(tmp) / "sample-signer"
        key_file.write_bytes(private_key)
        key_file.chmod(0o600)  # a checkout leaves it 0644; a key must be the user's alone
        key = load_signing_key(key_file)
        store = HandoffStore(Path(tmp) / THREAD_ID, agent_id=AGENT_ID, format=fmt, signing_key=key)
        primary = store.save(v20_content()).path
        sealed = load(primary)
        if fmt == "json":
            return primary.read_bytes()
        data = annotate_yaml(primary.read_bytes())
        commented = Path(tmp) / f"{NAME}.yaml"
        commented.write_bytes(data)
        if load(commented) != sealed:
            msg = "the commented YAML sample does not load as the handoff that was sealed"
            raise RuntimeError(msg)
        return data


def flip_bit(data: bytes, marker: bytes, offset: int, mask: int) -> bytes:
    """Flip the bits *mask* in the byte *offset* into the one occurrence of *marker* in *data*."""
    if data.count(marker) != 1:
        msg = f"marker {marker!r} occurs {data.count(marker)} times, not once"
        raise ValueError(msg)
    position = data.index(marker) + offset
    return data[:position] + bytes([data[position] ^ mask]) + data[position + 1 :]


def truncate(data: bytes) -> bytes:
    """Cut *data* in half, as a writer killed mid-write without an atomic rename leaves it."""
    return data[: len(data) // 2]


TICKET: Final = b"(ticket OPS-412)"  # in state.blocked_tasks only, in both legacy samples


def broken_cases(v08: bytes, v10: bytes, v20: bytes, v21: bytes) -> dict[str, tuple[bytes, Expected]]:
    """Derive every broken case from the intact samples' bytes: file name → (bytes, expected error)."""
    doc10 = json.loads(v10)
    doc08 = json.loads(v08)

    def altered(document: dict[str, Any], **changes: Any) -> bytes:
        changed = copy.deepcopy(document)
        changed.update(changes)
        return dump_legacy(changed)

    def without_version(document: dict[str, Any]) -> bytes:
        return dump_legacy({key: value for key, value in document.items() if key != "schema_version"})

    tampered_state = copy.deepcopy(doc10["state"])
    tampered_state["completed_tasks"].append(tampered_state["blocked_tasks"].pop(0))
    tampered_state["error_count"] = 0
    parse: Expected = {"error": "HandoffParseError", "contains": "invalid JSON"}
    checksum: Expected = {"error": "ChecksumMismatchError", "contains": "checksum"}
    seal: Expected = {"error": "ChecksumMismatchError", "contains": "does not match its seal"}
    newer: Expected = {"error": "UnsupportedVersionError", "contains": "newer than"}
    digest = json.loads(v20)["seal"]["digest"]
    wrong_digest = digest[:-1] + format((int(digest[-1], 16) + 1) % 16, "x")
    signature = json.loads(v21)["seal"]["signature"]
    doc20 = json.loads(v20)
    doc20["seal"]["signature"] = signature  # a signature is 2.1's alone: a 2.0 file holding one is not 2.0
    unarmored = signature.replace("-----BEGIN SSH SIGNATURE-----\n", "")
    not_valid: Expected = {"error": "HandoffValidationError", "contains": "signature"}
    return {
        "v0.8-truncated.json": (truncate(v08), parse),
        # 'OPS-412' becomes 'OPS-413' inside state.blocked_tasks: one bit, covered by the checksum
        "v0.8-flipped-byte.json": (flip_bit(v08, TICKET, 14, 0x01), checksum),
        "v0.8-wrong-checksum.json": (altered(doc08, checksum="0" * 16), checksum),
        "v1.0-truncated.json": (truncate(v10), parse),
        "v1.0-flipped-byte.json": (flip_bit(v10, TICKET, 14, 0x01), checksum),
        "v1.0-wrong-checksum.json": (altered(doc10, checksum=doc10["checksum"][::-1]), checksum),
        # a person moved the blocked task to completed by hand and left the old checksum
        "v1.0-tampered-state.json": (altered(doc10, state=tampered_state), checksum),
        "v1.0-unknown-version.json": (altered(doc10, schema_version="1.5"), _version("1.5")),
        "v1.0-no-version.json": (without_version(doc10), _version("no schema_version")),
        # 1.0 as a JSON number, as a hand-rolled writer might put it
        "v1.0-version-as-number.json": (altered(doc10, schema_version=1.0), _version("must be a string")),
        "v2.0-truncated.json": (truncate(v20), parse),
        # a bit flipped in the narrative, which the 2.0 seal covers (1.0's checksum did not)
        "v2.0-flipped-byte.json": (flip_bit(v20, b"dateutil: rows.py", 10, 0x01), seal),
        "v2.0-wrong-seal.json": (v20.replace(digest.encode(), wrong_digest.encode()), seal),
        "v3.0-newer-version.json": (v20.replace(b'"schema_version": "2.0"', b'"schema_version": "3.0"', 1), newer),
        "v2.1-truncated.json": (truncate(v21), parse),
        "v2.1-flipped-byte.json": (flip_bit(v21, b"dateutil: rows.py", 10, 0x01), seal),
        "v2.0-with-signature.json": ((json.dumps(doc20, indent=2, ensure_ascii=False) + "\n").encode(), not_valid),
        "v2.1-signature-not-armored.json": (
            v21.replace(json.dumps(signature).encode(), json.dumps(unarmored).encode()),
            not_valid,
        ),
    }


def _version(contains: str) -> Expected:
    return {"error": "UnsupportedVersionError", "contains": contains}


def write_samples(out: Path, *, refresh: bool = False) -> list[Path]:
    """Write every sample under *out* and return the paths written, in order.

    The 2.0 samples are kept (taken from ``samples/`` when *out* has none), the 2.1 samples and the
    key too unless *refresh*; everything else is rewritten from fixed data, byte for byte the same
    on every run.
    """
    v08, v10 = dump_legacy(v08_sample()), dump_legacy(v10_sample())
    files: dict[Path, bytes] = {
        out / "v0.8" / f"{NAME}.json": v08,
        out / "v1.0" / f"{NAME}.json": v10,
        out / "v1.0" / f"{WRITEUP}.json": dump_legacy(v10_writeup_sample()),
    }
    for fmt in ("json", "yaml"):
        path = out / "v2.0" / f"{NAME}.{fmt}"
        files[path] = (path if path.exists() else SAMPLES / "v2.0" / path.name).read_bytes()
    keys = sample_keys(out)
    files.update(keys)
    formats: tuple[Format, ...] = ("json", "yaml")
    for fmt in formats:
        path = out / "v2.1" / f"{NAME}.{fmt}"
        files[path] = (
            seal_v21(fmt, keys[out / "keys" / "sample-signer"]) if refresh or not path.exists() else path.read_bytes()
        )
    cases = broken_cases(v08, v10, files[out / "v2.0" / f"{NAME}.json"], files[out / "v2.1" / f"{NAME}.json"])
    for name, (data, _) in cases.items():
        files[out / "broken" / name] = data
    expected = {name: expectation for name, (_, expectation) in sorted(cases.items())}
    files[out / "broken" / "expected.json"] = (json.dumps(expected, indent=2) + "\n").encode("utf-8")
    for path, data in files.items():
        path.parent.mkdir(parents=True, exist_ok=True)
        if not path.exists() or path.read_bytes() != data:
            path.write_bytes(data)
    (out / "keys" / "sample-signer").chmod(
        0o600
    )  # as a key is kept; git keeps only 0644 or 0755, so a checkout widens it
    return list(files)


def main(argv: list[str] | None = None) -> int:
    """Write the samples; print what was written."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("out", nargs="?", type=Path, default=SAMPLES, help="directory to write into (samples/)")
    parser.add_argument("--refresh", action="store_true", help="seal and sign new 2.1 samples instead of keeping them")
    args = parser.parse_args(argv)
    for path in write_samples(args.out, refresh=args.refresh):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())
