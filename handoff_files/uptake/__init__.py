"""Uptake: the restored handoff written for a model's context, and the code that proves it was read."""
