"""Which environments use the catalog's entities: the questions a catalog write must ask first
(a definition that holds data, a component that is attached, is never dropped silently).

Read-only queries over every environment repository's served commit. REST writes and the
push gate (`catalog.rules.kept_definitions`, `catalog.rules.kept_components`) ask the same
questions here, so a change refused through one is refused through the other with the same
words.
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


def holders_text(holders: dict[int, list[str]]) -> str:
    """`1 (astute, globals), 3 (astute)`: environments and the resources they hold data for."""
    return ", ".join(f"{env} ({', '.join(names)})" for env, names in sorted(holders.items()))


def held_refusal(repos: Repositories, name: str, change: str) -> str | None:
    """Why definition `name` cannot be `change`d (`renamed`, `deleted`): the environments that
    hold data for it (their files are named by it), or None when none does."""
    holders = holding_data(repos, [name])
    if not holders:
        return None
    return (
        f"resource {name!r} cannot be {change}: environments hold data for it: "
        f"{holders_text(holders)}"
    )


def move_refusal(repos: Repositories, name: str, target: str | None) -> str | None:
    """Why definition `name` cannot move to component `target` (None: to no component): the
    environments that hold data for it and do not attach `target` would no longer see it."""
    attached = set(attaching(repos, target)) if target is not None else set()
    blind = {env: r for env, r in holding_data(repos, [name]).items() if env not in attached}
    if not blind:
        return None
    return (
        f"resource {name!r} cannot move: environments hold data for it and do not attach "
        f"the target component: {holders_text(blind)}"
    )


def attached_refusal(repos: Repositories, name: str, change: str) -> str | None:
    """Why component `name` cannot be `change`d (`renamed`, `deleted`): the environments that
    attach it (their `environment.yaml` names it), or None when none does."""
    attached = attaching(repos, name)
    if not attached:
        return None
    return (
        f"component {name!r} cannot be {change}: environments attach it: "
        f"{', '.join(map(str, attached))}; detach it first"
    )


def attaching(repos: Repositories, component_name: str) -> list[int]:
    """The environments that attach component `component_name`."""
    return [env_id for env_id, view in _served_views(repos) if component_name in view.components]


def _served_views(repos: Repositories) -> Iterator[tuple[int, EnvironmentView]]:
    for env_id in repos.environment_ids():
        try:
            yield env_id, EnvironmentView(repos.environment_repo(env_id).snapshot())
        except NotFound:
            continue  # deleted meanwhile
