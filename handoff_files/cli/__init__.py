"""The `handoff` command: a thin shell over the library (parse, one call, render)."""
