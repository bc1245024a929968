"""The torture suite at CI counts, and proof its checks catch broken writers."""
