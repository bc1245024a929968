"""Tests of the thread layer: the store, commit, recovery, doctor, journal and their behaviour under kills."""
