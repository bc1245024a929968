"""Tests of the `handoff` command."""
