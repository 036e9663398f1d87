"""Hidden plan parameters: sealed in git, masked in answers, revealed to those allowed.

A parameter is hidden when the master template says `hidden: true` (copied from the role that
declared it). Secret are, by the rules of `gitstore.secrets`:

- in `plans/<name>/plan.yaml`, each hidden parameter's default: `parameters.<P>.default`;
- in `plans/<name>/environment.yaml`, each hidden parameter's value: `parameters.<P>`.

The git driver writes both files through `documents.encode` with the `Sealer` made here, so a
hidden value reaches git only as `ENC[...]` bound to the catalog, the file and the key path.
Answers mask hidden values (and any sealed value) as `******`; a reveal opens them.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING

from gitstore.errors import Unavailable
from gitstore.plans import heat
from gitstore.secrets import mask
from gitstore.secrets.caller import NOBODY, Caller
from gitstore.secrets.rules import Rules
from gitstore.secrets.seal import Sealer

if TYPE_CHECKING:
    from gitstore.secrets.keyring import Keys
    from gitstore.secrets.service import Secrets

#: The repository part of a sealed plan value's place.
REPOSITORY = "catalog"
FOLDER = "plans"
MASTER = "plan.yaml"
ENVIRONMENT = "environment.yaml"


def plan_file(plan_name: str, file: str) -> str:
    """`plans/<name>/<file>`: where a plan's file lives (and what its sealed values name)."""
    return f"{FOLDER}/{plan_name}/{file}"


def rules(file: str, master: Mapping) -> Rules:
    """The secret key paths of a plan's `file` (either of its two documents)."""
    hidden = heat.hidden_names(master)
    patterns: tuple[tuple[str, ...], ...]
    if file.rsplit("/", 1)[-1] == MASTER:
        patterns = tuple(("parameters", name, "default") for name in hidden)
    else:
        patterns = tuple(("parameters", name) for name in hidden)
    return Rules(patterns, defaults=False)


class Hidden:
    """Seals, masks and reveals the hidden values of plans with the store's keyring."""

    def __init__(self, secrets: Secrets | None) -> None:
        #: The store's secrets service; None in a memory driver (nothing can be sealed).
        self._secrets = secrets

    def _keys(self) -> tuple[Keys | None, str]:
        if self._secrets is None:
            return None, "no keyring: no store"
        keyring = self._secrets.keyring
        try:
            return keyring.current(), f"no keyring at {keyring.path}"
        except Unavailable as exc:
            return None, exc.message

    @property
    def caller(self) -> Caller:
        """The rule the store's front end bound (`Secrets.bind_caller`); NOBODY without one."""
        return self._secrets.caller if self._secrets is not None else NOBODY

    def sealer(self, master: Mapping, caller: Caller) -> Sealer:
        """The sealer of both documents of a plan whose master template is `master`; it
        compares sent values with stored ones only for a caller who may reveal the catalog's
        secrets (store-wide `secrets`), so nobody else can test guesses (`secrets/caller.py`)."""
        keys, problem = self._keys()
        return Sealer(
            REPOSITORY,
            keys,
            lambda file: rules(file, master),
            problem,
            compare=caller(None),
        )

    def show(
        self, document: dict, file: str, master: Mapping, reveal: bool
    ) -> tuple[dict, list[str]]:
        """`document` (stored at `file`) masked, or revealed, and the dotted paths concerned."""
        file_rules = rules(file, master)
        if not reveal:
            return mask.mask(document, file_rules)
        keys, problem = self._keys()
        return mask.Opener(REPOSITORY, keys, problem).reveal(document, file_rules, file)

    def record(self, who: str | None, what: str, commit: str | None, paths: list[str]) -> None:
        """Note a reveal in the audit log (no environment: the catalog's secrets)."""
        if paths and self._secrets is not None:
            self._secrets.audit.record(who, None, what, commit, paths)
