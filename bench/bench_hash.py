"""The hash and JSON benchmark: the measurements behind blake3 as the default seal and orjson as the encoder.

``python -m bench.bench_hash`` measures, interleaved:

- the throughput of each seal algorithm the library offers (sha256, blake2b with a 32-byte
  digest, blake3), through the library's own digest functions, over the canonical bytes a seal
  covers for a 2 KB, 100 KB and 1 MB handoff;
- on the 1 MB handoff: canonical encoding (sorted keys, compact) with stdlib ``json`` and with
  orjson ``OPT_SORT_KEYS``, the 2-space rendering of the file, and decoding with ``json`` and
  orjson (plus pydantic's own paths, for reference).

It writes its tables to ``bench/results-hash.md`` (``--out`` to change).
"""

from __future__ import annotations

import argparse
import json
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Final

import orjson

from bench.report import machine_facts, markdown_table, ms, run_kind, text_table, write_report
from bench.timing import Sample, calibrate, interleaved
from bench.workload import SIZES, build_content
from handoff_files.format import seal as sealing
from handoff_files.format.codec import render
from handoff_files.format.model import PARSED, Handoff, HandoffContent

__all__ = ["main"]

DEFAULT_OUT: Final = Path(__file__).resolve().parent / "results-hash.md"
FULL_ROUNDS: Final = 60
QUICK_ROUNDS: Final = 8
#: The baseline every algorithm is compared with: always readable, and what descriptors carry.
BASELINE: Final = "sha256"


def _document(target: int) -> dict[str, Any]:
    """A sealed handoff document in JSON mode, as ``load`` sees it after parsing."""
    layers = HandoffContent.model_validate(build_content(target)).model_dump(mode="json")
    document: dict[str, Any] = {
        "schema_version": "2.0",
        "agent_id": "bench-agent",
        "thread_id": "bench-thread",
        "generation": 7,
        "created_at": "2025-01-15T09:30:00.000000Z",
        "parent": "blake3:" + "0" * 64,
        "lineage": {"adopted_from": None, "migrated_from": None},
        **layers,
    }
    document["seal"] = {"algorithm": "blake3", "digest": sealing.digest(sealing.canonical(document))}
    return document


def _stdlib_canonical(document: Mapping[str, Any]) -> bytes:
    body = {key: value for key, value in document.items() if key != "seal"}
    return json.dumps(body, sort_keys=True, separators=(",", ":"), ensure_ascii=False, allow_nan=False).encode()


def _stdlib_render(document: Mapping[str, Any]) -> bytes:
    return (json.dumps(document, indent=2, ensure_ascii=False, allow_nan=False) + "\n").encode()


def _digest(data: bytes, algorithm: str) -> Callable[[], str]:
    return lambda: sealing.digest(data, algorithm)


def _hash_rows(rounds: int) -> tuple[list[str], list[list[str]]]:
    """Throughput of every seal algorithm at every size, through the library's digest functions."""
    per_size: list[tuple[int, dict[str, Sample]]] = []
    for size in SIZES:
        data = sealing.canonical(_document(size.target))
        cases = {name: _digest(data, name) for name in sealing.ALGORITHMS}
        batches = {name: calibrate(operation) for name, operation in cases.items()}
        print(f"hashing {size.label} ({len(data):,} canonical bytes, {rounds} rounds)...", flush=True)
        per_size.append((len(data), interleaved(cases, repeats=rounds, batch=batches)))
    headers = ["algorithm"]
    for size, (length, _) in zip(SIZES, per_size, strict=True):
        headers += [f"{size.label} ({length:,} B) us", "MB/s"]
    headers.append(f"speed vs {BASELINE} at {SIZES[-1].label}")
    rows = []
    for name in sealing.ALGORITHMS:
        row = [f"{name} (default)" if name == sealing.DEFAULT_ALGORITHM else name]
        for length, samples in per_size:
            median = samples[name].median
            row += [f"{median * 1e6:,.1f}", f"{length / median / 1e6:,.0f}"]
        last = per_size[-1][1]
        row.append(f"{last[BASELINE].median / last[name].median:.2f}x")
        rows.append(row)
    return headers, rows


def _speed(factor: float) -> str:
    return f"{factor:.2f}x faster" if factor >= 1 else f"{1 / factor:.2f}x slower"


def _json_rows(rounds: int) -> tuple[list[str], list[list[str]], list[str]]:
    """Encode and decode the 1 MB handoff with stdlib json, orjson and pydantic."""
    size = SIZES[-1]
    document = _document(size.target)
    data = render(document, "json")
    handoff = Handoff.model_validate(document, context={PARSED: True})
    notes = [
        f"canonical bytes identical (json vs orjson): {_stdlib_canonical(document) == sealing.canonical(document)}",
        f"file bytes identical (json indent=2 vs orjson OPT_INDENT_2): {_stdlib_render(document) == data}",
    ]
    groups: dict[str, dict[str, Callable[[], object]]] = {
        "canonical encode (sorted keys, compact)": {
            "stdlib json.dumps(sort_keys=True)": lambda: _stdlib_canonical(document),
            "orjson OPT_SORT_KEYS (the seal's)": lambda: sealing.canonical(document),
            "pydantic model_dump_json (unsorted: not canonical)": handoff.model_dump_json,
        },
        "render the file (2-space indent)": {
            "stdlib json.dumps(indent=2)": lambda: _stdlib_render(document),
            "orjson OPT_INDENT_2 (the codec's)": lambda: render(document, "json"),
        },
        "decode the file": {
            "stdlib json.loads": lambda: json.loads(data),
            "orjson.loads (the codec's)": lambda: orjson.loads(data),
        },
        "decode + validate the file": {
            "stdlib json.loads + Handoff.model_validate": lambda: Handoff.model_validate(
                json.loads(data), context={PARSED: True}
            ),
            "orjson.loads + Handoff.model_validate (the loader's)": lambda: Handoff.model_validate(
                orjson.loads(data), context={PARSED: True}
            ),
            "pydantic Handoff.model_validate_json": lambda: Handoff.model_validate_json(data),
        },
    }
    print(f"encoding and decoding {size.label} ({len(data):,} B file, {rounds} rounds)...", flush=True)
    headers = ["operation", "implementation", "median ms", "p90 ms", "vs the first row of its operation"]
    rows = []
    for operation, cases in groups.items():
        samples = interleaved(cases, repeats=rounds)
        first = next(iter(samples.values())).median
        for index, (name, sample) in enumerate(samples.items()):
            speed = "baseline" if index == 0 else _speed(first / sample.median)
            rows.append([operation, name, ms(sample.median), ms(sample.quantile(0.9)), speed])
    return headers, rows, notes


_METHOD: Final = """\
Hashes go through the library's own functions (`handoff_files.format.seal.digest`, hex digest included)
over the canonical bytes a seal covers; small inputs are timed in batches of calls (about 2 ms
per batch) so the timer does not dominate; MB/s counts 10^6 bytes. Every figure is a median over
interleaved rounds with `gc.collect()` before each batch. "vs the first row" is the first row's
median over this row's.
"""


def _parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="python -m bench.bench_hash",
        description="Time the seal's hash algorithms and the JSON encoders and decoders.",
    )
    parser.add_argument("--quick", action="store_true", help="fewer rounds: a smoke run, not a figure")
    parser.add_argument(
        "--out",
        type=Path,
        default=DEFAULT_OUT,
        help=f"Markdown report to write (default: {DEFAULT_OUT.relative_to(DEFAULT_OUT.parents[1])})",
    )
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark, print its tables and write its report.

    :returns: 0.
    """
    args = _parser().parse_args(argv)
    rounds = QUICK_ROUNDS if args.quick else FULL_ROUNDS
    hash_headers, hash_rows = _hash_rows(rounds)
    json_headers, json_rows, notes = _json_rows(rounds)
    print()
    print(text_table(hash_headers, hash_rows))
    print()
    print(text_table(json_headers, json_rows, left=2))
    print()
    print("\n".join(notes))
    write_report(
        args.out,
        "handoff-files: seal hashes and JSON libraries",
        [*machine_facts(), run_kind(quick=args.quick)],
        [
            "## Seal hash throughput\n\n" + markdown_table(hash_headers, hash_rows),
            f"## JSON on the {SIZES[-1].label} handoff\n\n"
            + markdown_table(json_headers, json_rows, left=2)
            + "\n\n"
            + "\n".join(f"- {note}" for note in notes),
            "## Method\n\n" + _METHOD,
        ],
    )
    print(f"\nwrote {args.out}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
