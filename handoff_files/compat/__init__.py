"""Compatibility with other agent frameworks' handoff formats (``sw4rm``: SW4RM's ``HandoffContext``)."""
