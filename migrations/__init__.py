"""Migration steps between schema versions, one file per step; shipped as ``handoff_files.migrations``.

Each step module defines ``SOURCE`` and ``TARGET`` (version strings) and ``upgrade(document)``:
a pure function from a mapping of the source version to a new dict of the target version. It
does no I/O and never mutates its input. Every assumption it makes goes, as a plain sentence,
into the list under the key :data:`handoff_files.format.versions.NOTES` of the dict it returns; that
key is an object, not a string, so no key of a real document can collide with it. The chain
collects the notes into ``lineage.migrated_from.notes``. A step raises ``TypeError`` or
``ValueError`` for a document it cannot read faithfully (the loader reports it as a
``HandoffMigrationError``) rather than guess.
"""
