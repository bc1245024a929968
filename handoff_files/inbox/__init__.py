"""Requests between agents: the request model and its statuses, the inbox lifecycle, the capability gate and serving."""
