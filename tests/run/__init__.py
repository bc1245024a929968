"""Tests of the supervisor, the kill runner and the pytest plugin."""
