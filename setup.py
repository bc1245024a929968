"""Package discovery for setuptools: one rule, so a new folder can never be left out of the wheel.

Everything else (metadata, extras, scripts, package data) lives in pyproject.toml; only the list of
packages is computed here, because pyproject.toml cannot say "every folder under handoff_files/, plus
the top-level migrations/ and schemas/ shipped inside it" in one rule.
"""

from __future__ import annotations

from setuptools import find_namespace_packages, setup

# migrations/ (one file per step) and schemas/ (one JSON Schema per version) sit at the top of the
# repository and ship as handoff_files.migrations / handoff_files.schemas (see package-dir in pyproject.toml)
SHIPPED_INSIDE = {"handoff_files.migrations": "migrations", "handoff_files.schemas": "schemas"}


def packages() -> list[str]:
    """Every folder of the package and of the shipped top-level folders, data-only folders included.

    :returns: dotted package names, sorted
    """
    found = find_namespace_packages(include=["handoff_files", "handoff_files.*"], exclude=["*.__pycache__"])
    for name, folder in SHIPPED_INSIDE.items():
        found += [name, *(f"{name}.{sub}" for sub in find_namespace_packages(where=folder, exclude=["*__pycache__"]))]
    return sorted(found)


setup(packages=packages())
