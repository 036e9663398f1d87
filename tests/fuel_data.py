"""Paths of the real Fuel data the tests and benches use (a vendored copy, see its README)."""

from __future__ import annotations

from pathlib import Path

FUEL = Path(__file__).resolve().parent / "data" / "fuel"
ASTUTE = FUEL / "astute"
HIERA_OVERRIDE = FUEL / "hiera-override"
RELEASE = FUEL / "release-newton-10.0.yaml"
RELEASE_GRAPH = FUEL / "release-graph-newton-10.0.yaml"
