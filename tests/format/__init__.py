"""Tests of the format layer: the model, the strict reader, the seal, versions, the loader, schemas."""
