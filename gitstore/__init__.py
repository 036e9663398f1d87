"""gitstore: a configuration store in which git is the database.

The facade the front ends (`gitstore.api`, `cli`, `webhooks`) call is the `Store`
(`gitstore.store`), imported here plainly: `from gitstore import Store`. Every other name a
front end uses (value types, constants, free functions) is imported from the module that
defines it, so a reader and a type checker follow each one to its definition.

`_PENDING` still hands out, on first use, the names that three modules being reworked
elsewhere import from here (`gitstore.api.auth`, `gitstore.api.fastpath`, `cli.server`); it
only shrinks: tests/test_conventions.py fails when any other module imports a name through it.
"""

from __future__ import annotations

import importlib
from typing import Any

from gitstore.store import Store

__version__ = "0.1.0"
__all__ = ["Store"]

#: Name -> (the module that defines it, its name there), for the modules named above only.
_PENDING = {
    "ACCESS_REQUIRED": ("gitstore.access.policy", "ACCESS_REQUIRED"),
    "ANONYMOUS_READ": ("gitstore.access.policy", "ANONYMOUS_READ"),
    "ANY": ("gitstore.access.policy", "ANY"),
    "AccessFile": ("gitstore.access.policy", "AccessFile"),
    "Credentials": ("gitstore.access.policy", "Credentials"),
    "Identity": ("gitstore.access.policy", "Identity"),
    "ROLES": ("gitstore.access.policy", "ROLES"),
    "SERVED_HOSTS": ("gitstore.access.policy", "SERVED_HOSTS"),
    "require": ("gitstore.access.policy", "require"),
    "FailureLog": ("gitstore.access.ratelimit", "FailureLog"),
    "token_id_of": ("gitstore.access.credentials", "token_id_of"),
    "KEYSTONE": ("gitstore.access.keystone", "KEYSTONE"),
    "KeystoneSettings": ("gitstore.access.keystone", "KeystoneSettings"),
    "KeystoneValidator": ("gitstore.access.keystone", "KeystoneValidator"),
    "LRUCache": ("gitstore.backend.cache", "LRUCache"),
    "LoadReport": ("gitstore.configdb.importer", "LoadReport"),
    "SAMPLE_DIR": ("gitstore.configdb.importer", "SAMPLE_DIR"),
    "ClusterSecret": ("gitstore.cluster.secret", "ClusterSecret"),
    "CLUSTER_KEY_FILE": ("gitstore.cluster.secret", "KEY_FILE"),
    "cluster_settings": ("gitstore.cluster.settings", "settings"),
    "run_coordinator": ("gitstore.cluster.coordinator", "run"),
    "parse_size": ("gitstore.ops.health", "parse_size"),
    "start_poller": ("gitstore.gitops.service", "start_poller"),
}


def __getattr__(name: str) -> Any:
    if name not in _PENDING:
        raise AttributeError(f"module 'gitstore' has no attribute {name!r}")
    module, defined_as = _PENDING[name]
    value = getattr(importlib.import_module(module), defined_as)
    globals()[name] = value
    return value
