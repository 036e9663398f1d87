"""The push gate's rules: the one list of every rule each repository kind must satisfy.

`gitstore validate`, the pre-receive hook, mirror syncs, reviews and `gitstore fsck` all call
`validate` here, so each runs the same rules whatever was imported first. A new rule family
adds its function to this list (tests/gitops/test_rules.py checks the list is whole).
"""

from __future__ import annotations

from collections.abc import Sequence

from gitstore import validation
from gitstore.backend.snapshot import Snapshot
from gitstore.catalog import rules as catalog_rules
from gitstore.configdb import rules as environment_rules
from gitstore.deadlines import Deadline
from gitstore.deployment import graphs
from gitstore.filechecks import FileChecks
from gitstore.plans import gate as plan_gate
from gitstore.repositories import Repositories
from gitstore.secrets import gate as secrets_gate
from gitstore.upgrade import networks, settings
from gitstore.validation import CATALOG, ENVIRONMENT, Catalog, Check, Problem, TreeCheck

#: Repository kind -> its rules, run in this order (a problem found twice is reported once).
RULES: dict[str, Sequence[Check]] = {
    ENVIRONMENT: (
        validation.regular_files,
        validation.utf8_paths,
        validation.yaml_names,
        validation.yaml_parses,
        environment_rules.environment_file,
        environment_rules.top_level,
        environment_rules.layers,
        secrets_gate.check_tree,  # no secret in plain text (docs/secrets.md)
        environment_rules.mapping_files,
        graphs.cluster_graphs,
        settings.environment_settings_files,
        networks.network_files,
    ),
    CATALOG: (
        validation.regular_files,
        validation.utf8_paths,
        validation.yaml_names,
        validation.yaml_parses,
        catalog_rules.catalog_documents,
        catalog_rules.kept_definitions,  # no environment's data loses its definition
        catalog_rules.kept_components,  # no environment names a missing component
        graphs.catalog_graphs,
        plan_gate.no_plain_hidden_values,
        settings.release_settings_files,
    ),
}


def validate(
    snapshot: Snapshot,
    kind: str,
    *,
    catalog: Catalog | None = None,
    env_id: int | None = None,
    repos: Repositories | None = None,
    checks: FileChecks | None = None,
) -> list[Problem]:
    """Every problem of one commit of a `catalog` or `environment` repository (see
    `validation.validate_tree`; `checks` keeps per-file results between calls)."""
    return check(
        snapshot, kind, catalog=catalog, env_id=env_id, repos=repos, checks=checks
    ).sorted_problems()


def check(
    snapshot: Snapshot,
    kind: str,
    *,
    catalog: Catalog | None = None,
    env_id: int | None = None,
    repos: Repositories | None = None,
    checks: FileChecks | None = None,
    deadline: Deadline | None = None,
) -> TreeCheck:
    """`validate`'s check with its tree kept (`validation.check_tree`)."""
    rules = RULES.get(kind, ())
    return validation.check_tree(
        snapshot,
        kind,
        rules,
        catalog=catalog,
        env_id=env_id,
        repos=repos,
        checks=checks,
        deadline=deadline,
    )
