"""Watching a thread (or a folder of them) with watchdog: the latest verified handoff in memory."""
