"""Tests of the watchers."""
