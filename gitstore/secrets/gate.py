"""The push gate's secret rule: no plain text at a secret path of a pushed environment tree.

The push gate's list (`gitstore.gitops.rules`) runs `check_tree` on every environment tree it
checks (push gate, mirror sync, review, `gitstore validate`). It reports, naming file and key
(never the value):

- a plain value at a secret path (seal it with `gitstore secrets encrypt` before pushing);
- a value that looks sealed (`ENC[...`) but is not well formed;
- an `environment.yaml` whose `secret_keys` is not a list of dotted key paths.

It needs no key: whether a sealed value opens is checked when it is revealed.
"""

from __future__ import annotations

from functools import partial
from typing import TYPE_CHECKING, Any

from gitstore.errors import InvalidInput
from gitstore.layout import ENVIRONMENT_FILE
from gitstore.secrets import cipher, eyaml
from gitstore.secrets.leaves import marked_leaves
from gitstore.secrets.rules import Rules, parse_patterns, rules_for_file

if TYPE_CHECKING:
    from gitstore.validation import TreeCheck

_YAML = ".yaml"


def check_tree(tree: TreeCheck) -> None:
    """Report every secret stored in plain text, and every malformed sealed value."""
    environment = tree.document(ENVIRONMENT_FILE)
    environment = environment if isinstance(environment, dict) else {}
    try:
        parse_patterns(environment.get("secret_keys"), "secret_keys")
    except InvalidInput as exc:
        tree.report(ENVIRONMENT_FILE, exc.message, key="secret_keys")
    definitions = _definitions(tree, environment)
    context = tree.data_context()
    for file in tree.files:
        if not file.endswith(_YAML) or file == ENVIRONMENT_FILE:
            continue
        tree.per_file(
            "secrets", file, context, partial(_check_file, tree, file, definitions, environment)
        )


def _check_file(tree: TreeCheck, file: str, definitions: dict | None, environment: dict) -> None:
    document = tree.document(file)
    if isinstance(document, dict):
        check_document(tree, file, document, rules_for_file(file, definitions, environment))


def _definitions(tree: TreeCheck, environment: dict) -> dict[str, dict] | None:
    if tree.catalog is None:
        return None
    components = environment.get("components")
    if not isinstance(components, list):
        return {}
    names = [name for name in components if isinstance(name, str)]
    return {d["name"]: d for d in tree.catalog.definitions_of(names)}


#: How to seal an environment's file before pushing it.
SEAL_HINT = "`gitstore secrets encrypt FILE --env ID`, see docs/secrets.md"


def check_document(
    tree: TreeCheck, file: str, document: dict, rules: Rules, hint: str = SEAL_HINT
) -> None:
    """Report each plain value at a secret path of `document` and each malformed sealed one;
    `hint` says how to store that value sealed."""
    for path, value, secret in marked_leaves_of(tree, file, document, rules):
        key = ".".join(path)
        if eyaml.is_encrypted(value) and not value.startswith("ENC[v1,"):
            continue  # an eyaml value: checked and sealed by `eyamlpush`
        if cipher.is_sealed(value):
            if not cipher.well_formed(value):
                tree.report(
                    file,
                    "looks sealed (ENC[...) but is not a well-formed "
                    "ENC[v1,aesgcm,kid=...,n=...,d=...] value",
                    key=key,
                )
        elif secret and value is not None:
            tree.report(
                file, f"a secret stored in plain text; seal it before pushing ({hint})", key=key
            )


def marked_leaves_of(tree: TreeCheck, file: str, document: Any, rules: Rules) -> list[tuple]:
    """`leaves.marked_leaves` of `file`'s document, walked once per tree: the layout's schema
    check (`configdb.rules`, its secret leaves exempt) and this rule both read them."""
    return tree.memo(f"marked_leaves:{file}:{rules!r}", lambda: marked_leaves(document, rules))
