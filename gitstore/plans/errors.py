"""The seed's storage errors, placed in gitstore's one error tree.

    NameAlreadyUsed  (Conflict)  create with a name some object of the store already has
    UnknownName      (NotFound)  retrieve_by_name of a name the store does not hold
    UnknownVersion   (NotFound)  retrieve_by_name of a version the name does not have
    UnknownUUID      (NotFound)  an id that names no object of the store

Being subclasses of `gitstore.errors` classes, they map to HTTP (409, 404) through the one table
in `gitstore.api.errors` and print as one line in the CLI, like every other error.
"""

from __future__ import annotations

from gitstore.errors import Conflict, NotFound


class NameAlreadyUsed(Conflict):
    """The store already holds an object of that name (a new version is `update`)."""

    def __init__(self, what: str, name: str) -> None:
        super().__init__(
            f"{what} name {name!r} is already used; upload a new version instead", key="name"
        )
        self.name = name


class UnknownName(NotFound):
    """No object of the store has this name."""

    def __init__(self, what: str, name: str) -> None:
        super().__init__(f"{what} {name!r} does not exist", key="name")
        self.name = name


class UnknownVersion(NotFound):
    """The name exists, the version does not."""

    def __init__(self, what: str, name: str, version: object) -> None:
        super().__init__(f"{what} {name!r} has no version {version!r}", key="version")
        self.name = name
        self.version = version


class UnknownUUID(NotFound):
    """No object of the store has this uuid."""

    def __init__(self, what: str, uuid: str) -> None:
        super().__init__(f"{what} {uuid!r} does not exist", key="uuid")
        self.uuid = uuid
