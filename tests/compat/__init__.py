"""Tests of the SW4RM compatibility layer."""
