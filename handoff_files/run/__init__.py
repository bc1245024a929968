"""Running an agent under supervision: the supervisor (`handoff run`), the kill runner, their process handling."""
