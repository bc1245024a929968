"""One thread directory: layout, journal, state.json mirror, commit, recovery, doctor and the HandoffStore facade."""
