"""The signing bench (issue 22): what an SSHSIG signature adds to a 1 KB save and restore, alone and in them.

``python -m bench.bench_signing`` measures, interleaved, on this machine:

- ``sign``: an Ed25519 SSHSIG signature over a seal's text (``SigningKey.sign``: SHA-512 of the
  message, the framing, the signature, the armor), the work a signed save adds;
- ``verify``: reading that armored signature, checking it, and finding its signer in an
  ``allowed_signers`` of 20 lines (already read), the work checking a signed generation adds;
- ``save``: a default (journal) ``HandoffStore.save`` of the 1 KB handoff with ``signing_key=False``,
  and ``save:signed``: the same save by a store given a key (signed);
- ``load``: a verified ``load`` of an unsigned primary;
- ``restore``: ``HandoffStore(...).restore()`` of a thread whose one generation is unsigned, a fresh
  store each time, and ``restore:signed``: the same of a signed generation, its signer looked up
  in an ``allowed_signers`` file of 20 lines (read by the restore, as a user's is).

It prints each primitive against its Ed25519 floor and issue 22's goal (≤ 0.1 ms each), and what
signing adds to the real save and verifying to the real restore (signed minus unsigned, by
medians and round by round) against the same goal, the unsigned op (the baseline) and the
floor (for the restore, ``floor:restore``: one bare Ed25519 verification and the bare reads of the
files trusting a pinned thread needs), and writes ``bench/results-signing.md`` (``--out`` to change;
``--quick`` for a smoke run). No user configuration or state takes part: ``XDG_CONFIG_HOME`` and
``XDG_STATE_HOME`` point into the scratch folder for the run.
"""

from __future__ import annotations

import argparse
import datetime as dt
import functools
import os
import statistics
import tempfile
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Final
from unittest import mock

from bench.report import machine_facts, markdown_table, ms, run_kind, text_table, write_report
from bench.timing import Sample, interleaved
from bench.workload import build_content
from handoff_files import HandoffStore, load
from handoff_files.signing import sshsig
from handoff_files.signing.allowed import AllowedSigners
from handoff_files.signing.keys import KEY_ENV, allowed_signers_line, create_key
from handoff_files.signing.revoked import REVOKED_NAME
from handoff_files.thread.pins import pins_path
from handoff_files.thread.signatures import ALLOWED_SIGNERS_ENV
from handoff_files.thread.userrecord import record_path

DEFAULT_OUT: Final = Path(__file__).resolve().parent / "results-signing.md"
GOAL_MS: Final = 0.1
#: the real operations compared signed against unsigned: (case, what it adds, the floor of that work)
#: each real op: its case, the primitive it adds and its floor, and how many of them it does (a signed
#: save signs its seal and its state.json; a restore verifies one signature)
REAL: Final = (("save", "sign", "floor:sign", 2), ("restore", "verify", "floor:verify", 1))
#: the floor of what signing adds, by case, bare: to a save, two Ed25519 signatures and the rollback
#: anchor moved on (its file read, a line appended); to a restore of a pinned
#: thread, one Ed25519 verification and the reads the promise needs (allowed_signers, the anchor; an
#: lstat of revoked_keys and of the pin record)
FLOORS: Final = {"save": "floor:save", "restore": "floor:restore"}


@contextmanager
def no_user_configuration(scratch: Path) -> Iterator[None]:
    """For the run: ``XDG_CONFIG_HOME`` and ``XDG_STATE_HOME`` in *scratch* and the key and allowed_signers
    variables unset, so no configured key signs the unsigned cases, no user's trust file is read and
    the pins and rollback anchors the signed cases make are not the user's."""
    homes = {"XDG_CONFIG_HOME": str(scratch / "config-home"), "XDG_STATE_HOME": str(scratch / "state-home")}
    with mock.patch.dict(os.environ, homes):
        for name in (KEY_ENV, ALLOWED_SIGNERS_ENV):
            os.environ.pop(name, None)
        yield


def measure(folder: Path, *, repeats: int, batch: int) -> dict[str, Sample]:
    """Per-call samples of the primitives and of the 1 KB save, load and restore (unsigned, signed), interleaved."""
    key = create_key(folder / "key")
    others = [create_key(folder / f"other{n}") for n in range(19)]
    trust = folder / "trust" / "allowed_signers"
    trust.parent.mkdir(mode=0o700)
    text = "".join(f"{allowed_signers_line(k, f'person{n}@example.com')}\n" for n, k in enumerate(others))
    trust.write_text(text + f"{allowed_signers_line(key, 'agent@ci')}\n", encoding="utf-8")
    allowed = AllowedSigners.parse(trust.read_text(encoding="utf-8"), trust)
    content = build_content(1024)
    plain = HandoffStore(folder / "plain", signing_key=False)
    signed_store = HandoffStore(folder / "signed", signing_key=key, allowed_signers=trust)
    receipt = plain.save(content)
    signed_store.save(content)
    HandoffStore(folder / "restore-plain", signing_key=False).save(content)
    HandoffStore(folder / "restore-signed", signing_key=key).save(content)
    seal = str(receipt.checksum).encode()
    armored = key.sign(seal)
    at = dt.datetime.now(dt.UTC)

    def verify() -> str:
        return allowed.signer_of(sshsig.verify(armored, seal, "bench"), at=at)

    def restorer(name: str) -> HandoffStore:
        return HandoffStore(folder / name, signing_key=False, allowed_signers=trust)

    if verify() != "agent@ci":
        msg = "the bench's own signature did not verify as agent@ci"
        raise RuntimeError(msg)
    for name, principal in (("restore-plain", None), ("restore-signed", "agent@ci")):
        restored = restorer(name).restore()
        signer = None if restored.signature is None else restored.signature.principal
        if (restored.source, restored.problems, signer) != ("primary", (), principal):
            msg = f"{name} restored from its {restored.source}, {restored.problems}, signed by {signer}"
            raise RuntimeError(msg)
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

    parsed = sshsig.parse(armored, "bench")
    public = Ed25519PublicKey.from_public_bytes(parsed.key[-32:])
    framed = sshsig.to_sign(seal, sshsig.NAMESPACE, parsed.hash_algorithm)
    cases: dict[str, Callable[[], object]] = {
        "sign": lambda: key.sign(seal),
        "floor:sign": lambda: key.private.sign(framed),
        "verify": verify,
        "floor:verify": lambda: public.verify(parsed.signature, framed),
        "save": lambda: plain.save(content),
        "save:signed": lambda: signed_store.save(content),
        "load": lambda: load(plain.primary),
        "restore": lambda: restorer("restore-plain").restore(),
        "restore:signed": lambda: restorer("restore-signed").restore(),
    }
    sign = functools.partial(key.private.sign, framed)
    cases |= bare_floors(folder, trust, sign, functools.partial(public.verify, parsed.signature, framed))
    sizes = dict.fromkeys(cases, batch)
    return interleaved(cases, repeats=repeats, warmup=2, batch=sizes)


def bare_floors(
    folder: Path, trust: Path, sign: Callable[[], object], verify: Callable[[], None]
) -> dict[str, Callable[[], object]]:
    """The floors of what signing adds, bare (see :data:`FLOORS`): ``floor:save`` and ``floor:restore``.

    Looks up the rollback anchor and the pin record the signed cases' warm-up made (in this run's
    state folder), and refuses to run without them: a floor of files that do not exist measures nothing.
    """
    anchors = list(record_path("anchors").iterdir())
    revoked, pins = trust.parent / REVOKED_NAME, pins_path()
    if not anchors or not pins.exists():
        msg = f"the signed cases left {len(anchors)} rollback anchors, the pin record {pins.exists()}: expected both"
        raise RuntimeError(msg)
    anchor, body = anchors[0], anchors[0].read_bytes().splitlines(keepends=True)[-1]
    bare = folder / "bare-anchor.json"
    bare.write_bytes(body)

    def restore_floor() -> None:  # one verification, the reads a pinned restore needs
        verify()
        for path in (trust, anchor):
            with path.open("rb") as handle:
                handle.read()
        for path in (revoked, pins):
            os.path.lexists(path)

    def save_floor() -> None:  # two signatures, the anchor read and a line appended to it
        sign()
        sign()
        with bare.open("rb") as handle:
            handle.read()
        fd = os.open(bare, os.O_WRONLY | os.O_APPEND)
        os.write(fd, body)
        os.close(fd)
        if bare.stat().st_size > 1 << 16:
            bare.write_bytes(body)

    return {"floor:restore": restore_floor, "floor:save": save_floor}


def paired_added(signed: Sample, unsigned: Sample) -> float:
    """The median of the round-by-round differences signed minus unsigned (seconds): a second view of
    the added time that a slow stretch of the machine, hitting both cases of a round, moves less."""
    return statistics.median(s - u for s, u in zip(signed.seconds, unsigned.seconds, strict=True))


def rows(medians: dict[str, float]) -> list[list[str]]:
    """The report's rows: each primitive's time, its floor, the goal, and its share of the save or the load."""
    out = []
    for added, base in (("sign", "save"), ("verify", "load")):
        cost, floor = medians[added], medians[f"floor:{added}"]
        verdict = "MET" if cost * 1e3 <= GOAL_MS else "MISSED"
        label = f"{added} (adds to a 1 KB {base})"
        ratio, share = f"{cost / floor:.2f}", f"{cost / medians[base]:.1%}"
        out.append([label, ms(cost), ms(floor), ratio, f"<= {GOAL_MS}", verdict, ms(medians[base]), share])
    return out


def added_rows(medians: dict[str, float], paired: dict[str, float]) -> list[list[str]]:
    """The report's rows for the real save and restore: unsigned (the baseline), signed, their ratio, the
    time added (difference of medians; *paired*: round by round, by case), it against the primitive
    alone and the Ed25519 floor, and the verdict (on the difference of medians) against the goal."""
    labels = {
        "save": "save: signing_key=False vs a key",
        "restore": "restore (fresh store): unsigned vs signed, 20 allowed_signers",
    }
    out = []
    for case, primitive, floor, times in REAL:
        unsigned, signed = medians[case], medians[f"{case}:signed"]
        added = signed - unsigned
        bare = medians[FLOORS[case]]
        verdict = "MET" if added * 1e3 <= GOAL_MS else "MISSED"
        out.append(
            [
                labels[case],
                ms(unsigned),
                ms(signed),
                f"{signed / unsigned:.2f}",
                ms(added),
                ms(paired[case]),
                f"{added / (times * medians[primitive]):.2f}",
                f"{added / (times * medians[floor]):.2f}",
                ms(bare),
                f"{added / bare:.2f}",
                f"<= {GOAL_MS}",
                verdict,
            ]
        )
    return out


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m bench.bench_signing", description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="a smoke run: few rounds, not a figure")
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT)
    args = parser.parse_args(argv)
    repeats, batch = (5, 5) if args.quick else (200, 20)
    with tempfile.TemporaryDirectory(prefix="bench-signing-") as scratch, no_user_configuration(Path(scratch)):
        samples = measure(Path(scratch), repeats=repeats, batch=batch)
        facts = [*machine_facts(Path(scratch)), run_kind(quick=args.quick)]
    medians = {name: sample.median for name, sample in samples.items()}
    paired = {case: paired_added(samples[f"{case}:signed"], samples[case]) for case, *_ in REAL}
    headers = ["added work", "ms", "Ed25519 alone, ms", "÷ it", "goal ms", "verdict", "the op beside, ms", "share"]
    table = rows(medians)
    real_headers = [
        "1 KB op",
        "unsigned ms",
        "signed ms",
        "÷ unsigned",
        "added ms",
        "added, paired ms",
        "added ÷ primitive alone",
        "added ÷ Ed25519 alone",
        "the added work's floor, ms",
        "added ÷ that floor",
        "goal ms",
        "verdict",
    ]
    real = added_rows(medians, paired)
    print(text_table(headers, table))
    print()
    print(text_table(real_headers, real))
    section = "## What a signature adds (issue 22)\n\n" + markdown_table(headers, table)
    section += (
        "\n\nsign: SHA-512 of the seal's text, the SSHSIG framing, one Ed25519 signature, the armor. "
        "verify: parse the armor, one Ed25519 verification, the signer found in 20 allowed_signers "
        "lines (already read). Ed25519 alone: cryptography's sign or verify of the same framed bytes, the "
        "floor of the promise. The save and load beside them are unsigned: the share is of an unsigned op."
    )
    real_section = "## What signing adds to a real save and restore\n\n" + markdown_table(real_headers, real)
    real_section += (
        "\n\nsave: a default (journal) `HandoffStore.save` of the 1 KB handoff by a store made with "
        "`signing_key=False` (the baseline) and by one given a key allowed_signers trusts (so the thread is "
        "pinned and each save moves its rollback anchor on); the signed save signs twice, "
        "the seal (the sign above) and what it writes to state.json (the state layer's digest, its ids), "
        "so its floor is two Ed25519 signatures, and writes both into the files. restore: `HandoffStore(thread, "
        "signing_key=False, allowed_signers=FILE).restore()`, a fresh store each time, of a thread "
        "whose one generation is unsigned (the baseline) or signed; the signed restore verifies the "
        "signature over the seal, reads the 20-line allowed_signers file (and looks for revoked_keys "
        "beside it) and finds the signer. added: signed minus unsigned, by medians (the verdict's) and "
        "round by round (paired); ÷ primitive alone: the added time over the sign or verify above "
        "(twice the sign for a save); ÷ Ed25519 alone: over its floor (twice for a save). "
        "The added work's floor: for a save, two bare Ed25519 signatures and the rollback anchor moved on "
        "(its small file read, one line appended to it); for a restore, what trusting a "
        "pinned thread's generation needs at the least, bare: one Ed25519 verification, a read of "
        "allowed_signers and of the thread's rollback anchor, an lstat of revoked_keys and of the pin record. "
        f"All {repeats} rounds of batches of {batch}, interleaved "
        "in one run with the rows above."
    )
    write_report(args.out, "handoff-files: the cost of a signature", facts, [section, real_section])
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
