"""The diff's shortcut (a scope takes its parent's change unless its own layers hold keys on the
changed paths, `merge.reach`) against merging every scope from scratch, on random small
environments: two levels under global (role, node), deep and shallow merge (and a switch of
mode), knock-outs, shadows at values and at overrides, nested keys, files added and removed."""

from __future__ import annotations

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from merge.test_reach import DOCUMENTS, edited  # the documents of the pure tests

from gitstore import Store
from gitstore.backend.changes import ChangeSet
from gitstore.configdb.scopes import default_scopes, resources_at
from gitstore.layout import EnvironmentView, scope_of
from gitstore.merge.diff import diff_documents
from gitstore.merge.effective import MODES, merge_layers
from gitstore.versions.diffs import diff_environment

from .helpers import ALICE

FOLDERS = ("global", "role/compute", "role/other", "nodes/1", "nodes/2", "nodes/3")
FILES = [f"{folder}/{kind}/{name}.yaml" for folder in FOLDERS for kind in ("values", "overrides")
         for name in ("r", "s")]  # fmt: skip
#: Each node's chain as the console and previews name it.
CHAINS = [
    [("role", "compute"), ("nodes", "1")],
    [("role", "compute"), ("nodes", "2")],
    [("role", "other"), ("nodes", "3")],
    [("nodes", "1")],
    [],
]


@pytest.fixture(scope="module")
def store(tmp_path_factory) -> Store:
    store = Store.init(tmp_path_factory.mktemp("reach") / "store")
    store.components.create(
        {"name": "c", "resource_definitions": [{"name": "r"}, {"name": "s"}]}, ALICE
    )
    store.environments.create(
        {"id": 1, "components": ["c"], "hierarchy_levels": ["role", "nodes"]}, ALICE
    )
    return store


def _commit(
    store: Store, files: dict[str, dict | None], mode: str, options: dict | None = None
) -> str:
    repo = store.environment_repo(1)
    environment = repo.snapshot().read_mapping("environment.yaml")
    environment = {k: v for k, v in environment.items() if k != "lookup_options"}
    if options:
        environment["lookup_options"] = options
    changes = ChangeSet("random layers")
    changes.put("environment.yaml", yaml.safe_dump({**environment, "merge": mode}).encode())
    for path in FILES:
        if files.get(path) is None:
            changes.delete(path)
        else:
            changes.put(path, yaml.safe_dump(files[path], sort_keys=False).encode())
    return repo.update(lambda _: changes, ALICE).commit


def _brute_force(before: EnvironmentView, after: EnvironmentView, scopes) -> dict:
    """`diff_environment` as it was: every scope merged from its layers, then compared."""
    found: dict = {}
    for pairs in scopes:
        for name in sorted(resources_at(before, pairs) | resources_at(after, pairs)):
            change = diff_documents(
                merge_layers(before.layers(pairs, name), before.merge),
                merge_layers(after.layers(pairs, name), after.merge),
            )
            if change:
                found.setdefault(scope_of(pairs), {})[name] = change
    return found


@st.composite
def _versions(draw):
    """Layer files at `from` and at `to` (most unchanged, a few edited), and both modes."""
    old = {path: draw(st.one_of(st.none(), DOCUMENTS)) for path in FILES}
    new = dict(old)
    for path in draw(st.lists(st.sampled_from(FILES), min_size=1, max_size=4, unique=True)):
        new[path] = draw(st.one_of(st.none(), edited(old[path]), DOCUMENTS))
    mode = draw(st.sampled_from(MODES))
    switched = draw(st.sampled_from(MODES)) if draw(st.integers(0, 9)) == 0 else mode
    return old, new, mode, switched


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(versions=_versions())
def test_the_diff_of_every_scope_is_what_merging_it_from_scratch_gives(store, versions):
    old, new, mode, switched = versions
    repo = store.environment_repo(1)
    before = EnvironmentView(repo.snapshot(_commit(store, old, mode)))
    after = EnvironmentView(repo.snapshot(_commit(store, new, switched)))
    for scopes in (default_scopes(before, after), CHAINS):
        expected = _brute_force(before, after, scopes)
        assert repr(diff_environment(before, after, scopes)) == repr(expected)


#: Hiera's strategies on the random documents' keys: the diff merges whole chains under them.
LOOKUP_OPTIONS = st.sampled_from(
    [
        {"a": {"merge": "unique"}},
        {"a": {"merge": "hash"}, "b": {"merge": "first"}},
        {"a": {"merge": {"strategy": "deep", "knockout_prefix": "--"}}},
    ]
)


@settings(
    max_examples=30, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(versions=_versions(), options=LOOKUP_OPTIONS)
def test_with_lookup_options_the_diff_is_what_merging_from_scratch_gives(store, versions, options):
    old, new, mode, _ = versions
    repo = store.environment_repo(1)
    before = EnvironmentView(repo.snapshot(_commit(store, old, mode, options)))
    after = EnvironmentView(repo.snapshot(_commit(store, new, mode, options)))
    for scopes in (default_scopes(before, after), CHAINS):
        expected = _brute_force(before, after, scopes)
        assert repr(diff_environment(before, after, scopes)) == repr(expected)
