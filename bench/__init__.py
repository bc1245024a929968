"""Benchmarks: save and load against minimal baselines, hashes and JSON encoders (``python -m bench.bench_io``)."""
