"""The push gate's rule for plans: no hidden parameter in plain text in a pushed catalog.

The git driver seals hidden values on every REST write (`hidden.py`); a `git push` to the
catalog skips that door, so the gate checks what a push brings: in each
`plans/<name>/plan.yaml` the defaults of its hidden parameters, and in the plan's
`environment.yaml` their values, must be sealed (`ENC[...]`, well formed) or absent. Whether a
sealed value opens is checked when it is revealed, as for environments.
"""

from __future__ import annotations

from gitstore.plans.hidden import ENVIRONMENT, FOLDER, MASTER, rules
from gitstore.secrets.gate import check_document
from gitstore.validation import TreeCheck

#: Hidden values are sealed by the plan API and CLI, which hold the keyring.
HINT = (
    "set it with `gitstore plan set PLAN NAME=VALUE` or `PATCH /api/v1/plans/<uuid>`, "
    "which seal it; see docs/plans.md"
)


def no_plain_hidden_values(tree: TreeCheck) -> None:
    for name, is_folder in tree.children(FOLDER):
        master_file = f"{FOLDER}/{name}/{MASTER}"
        master = tree.document(master_file) if is_folder else None
        if not isinstance(master, dict):
            continue  # no plan here, or one whose master the other checks report
        for file in (master_file, f"{FOLDER}/{name}/{ENVIRONMENT}"):
            document = tree.document(file)
            if isinstance(document, dict):
                check_document(tree, file, document, rules(file, master), HINT)
