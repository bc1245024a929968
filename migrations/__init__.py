"""Migration steps between schema versions, one file per step; shipped as ``handoff_files.migrations``.

Each step module defines ``SOURCE`` and ``TARGET`` (version strings) and ``upgrade(document)``:
a pure function from a mapping of the source version to a new dict of the target version. It
does no I/O and never mutates its input. Every assumption it makes goes, as a plain sentence,
into the list under the key ``_notes`` of the dict it returns (the chain collects them into
``lineage.migrated_from.notes``).
"""
