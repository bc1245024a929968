"""Tests of the foundation layer: the writers' lock."""
