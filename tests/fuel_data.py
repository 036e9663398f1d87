"""Paths of the real Fuel data the tests and benches use (a vendored copy, see its README)."""

from __future__ import annotations

from pathlib import Path

import yaml

FUEL = Path(__file__).resolve().parent / "data" / "fuel"
ASTUTE = FUEL / "astute"
HIERA_OVERRIDE = FUEL / "hiera-override"
RELEASE = FUEL / "release-newton-10.0.yaml"
RELEASE_GRAPH = FUEL / "release-graph-newton-10.0.yaml"

#: The fields of a release body (POST /api/v1/releases) that Fuel's release file provides.
RELEASE_FIELDS = (
    "name",
    "version",
    "operating_system",
    "state",
    "description",
    "roles_metadata",
    "tags_metadata",
)


def newton_release() -> dict:
    """The release body of Fuel's Newton release (9 roles with tags, 13 tags): a new copy."""
    data = yaml.safe_load(RELEASE.read_text())
    return {key: data[key] for key in RELEASE_FIELDS}
