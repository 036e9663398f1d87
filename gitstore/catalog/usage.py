"""Which environments use the catalog's entities: the questions a catalog write must ask first
(a definition that holds data, a component that is attached, is never dropped silently).

Read-only queries over every environment repository's served commit.
"""

from __future__ import annotations

from collections.abc import Iterator

from gitstore.errors import NotFound
from gitstore.layout import EnvironmentView
from gitstore.repositories import Repositories


def holding_data(repos: Repositories, resource_names: list[str]) -> dict[int, list[str]]:
    """For each environment holding data for any of `resource_names`, which ones."""
    holders: dict[int, list[str]] = {}
    for env_id, view in _served_views(repos):
        held = [r for r in resource_names if view.resource_has_data(r)]
        if held:
            holders[env_id] = held
    return holders


def attaching(repos: Repositories, component_name: str) -> list[int]:
    """The environments that attach component `component_name`."""
    return [env_id for env_id, view in _served_views(repos) if component_name in view.components]


def _served_views(repos: Repositories) -> Iterator[tuple[int, EnvironmentView]]:
    for env_id in repos.environment_ids():
        try:
            yield env_id, EnvironmentView(repos.environment_repo(env_id).snapshot())
        except NotFound:
            continue  # deleted meanwhile
