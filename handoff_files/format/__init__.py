"""What a handoff is, with no directory: the model, the strict reader, the seal, versions, the loader and schemas."""
