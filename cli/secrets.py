"""`gitstore secrets ...`: the rules, the keyring, and sealing files of a GitOps clone.

- `rules --env ID`: which keys are secret (server or local store).
- `keys`, `rotate`, `remove-key ID`: the keyring of a store; run on the store's host (--root).
- `encrypt|decrypt|edit FILE --env ID`: a file of a clone of environment ID. With a copy of the
  keyring (`--keyring FILE` or GITSTORE_KEYRING) they work offline; without one, `encrypt` asks
  the server (--url) to seal, so a GitOps user needs no key at all (`writer` role).
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import click

from cli import output, values
from cli.client import Client
from cli.connection import current_connection, pass_client
from cli.local_client import LocalClient
from gitstore import yamlio
from gitstore.errors import InvalidInput
from gitstore.secrets.local import CloneFile


def register(group: click.Group) -> None:
    group.add_command(secrets)


@click.group()
def secrets() -> None:
    """Secrets: sealed values in git, masked on read (docs/secrets.md)."""


_env_option = click.option(
    "--env", "-e", "env", type=values.ENV_ID, required=True, help="Environment id."
)
_keyring_option = click.option(
    "--keyring",
    envvar="GITSTORE_KEYRING",
    show_envvar=True,
    type=click.Path(dir_okay=False, exists=True),
    help="A copy of the store's keyring.yaml: work offline.",
)
_file_argument = click.argument("file", type=click.Path(dir_okay=False, exists=True))
_catalog_option = click.option(
    "--catalog",
    type=click.Path(file_okay=False, exists=True),
    help="A clone of catalog.git: apply the resource definitions' secret_keys offline too.",
)
_in_place_option = click.option(
    "--in-place", "-i", is_flag=True, help="Rewrite FILE instead of printing the result."
)


@secrets.command("rules")
@_env_option
@click.option(
    "--format",
    "-f",
    "fmt",
    type=click.Choice(output.DOCUMENT_FORMATS),
    default="yaml",
    show_default=True,
)
@pass_client
def rules(client: Client, env: int, fmt: str) -> None:
    """Show which keys of environment ENV are secret."""
    output.emit(client.secret_rules(env), fmt)


# -- the keyring (on the store's host) ------------------------------------------------------------
def _local() -> LocalClient:
    connection = current_connection()
    if not connection.root:
        raise click.UsageError(
            "this command works on the store's keyring: give --root (or "
            "GITSTORE_ROOT) on the server's host"
        )
    client = connection.client()
    assert isinstance(client, LocalClient)  # --root was given
    return client


@secrets.command("keys")
def keys() -> None:
    """List the keyring's keys (active: the one new values are sealed with) and how many
    values each seals."""
    rows = [
        [
            key["id"],
            "*" if key["active"] else "",
            key["values"],
            key["created"] or "?",
            "NOT IN THE KEYRING" if key.get("missing") else "",
        ]
        for key in _local().store.secrets.key_report()
    ]
    click.echo(output.table(rows, ["id", "active", "values", "created", "note"]))


@secrets.command("rotate")
@click.option(
    "--no-new-key",
    is_flag=True,
    help="Keep the active key; only re-encrypt what is not sealed with it yet "
    "(finish an interrupted rotation, or seal values made secret by new rules).",
)
def rotate(no_new_key: bool) -> None:
    """Add a key, make it active, re-encrypt every secret (one commit per environment)."""
    local = _local()
    report = local.store.secrets.rotate(local.author, new_key=not no_new_key)
    click.echo(f"active key: {report['active']}")
    for repo in report["repositories"]:
        commit = repo["commit"][:12] if repo["commit"] else "no commit (nothing to re-encrypt)"
        click.echo(f"{repo['repository']}: {repo['values']} values, {commit}")


@secrets.command("remove-key")
@click.argument("key_id")
def remove_key(key_id: str) -> None:
    """Remove an old key that no value at the head of any environment uses."""
    _local().store.secrets.remove_key(key_id)
    click.echo(f"removed key {key_id}")


# -- files of a clone ---------------------------------------------------------------------------
@secrets.command("encrypt")
@_file_argument
@_env_option
@_keyring_option
@_catalog_option
@_in_place_option
def encrypt(file: str, env: int, keyring: str | None, catalog: str | None, in_place: bool) -> None:
    """Seal the secret values of FILE, a file of a clone of environment ENV.

    Offline with --keyring; otherwise the server (--url) or local store (--root) seals.
    """
    clone = CloneFile(file, env, catalog)
    if keyring:
        data = clone.sealed(keyring)
    else:
        connection = current_connection()
        _, document = clone.read()
        data = clone.with_document(connection.client().encrypt_secrets(env, clone.path, document))
    _emit(clone, data, in_place)


@secrets.command("decrypt")
@_file_argument
@_env_option
@_keyring_option
@_in_place_option
def decrypt(file: str, env: int, keyring: str | None, in_place: bool) -> None:
    """Show FILE with its sealed values in plain text (needs the keyring). Never commit that."""
    clone = CloneFile(file, env)
    _emit(clone, clone.opened(_require(keyring)), in_place)


@secrets.command("edit")
@_file_argument
@_env_option
@_keyring_option
@_catalog_option
def edit(file: str, env: int, keyring: str | None, catalog: str | None) -> None:
    """Edit FILE in plain text in $EDITOR, then seal it again (unchanged values keep their
    ciphertext)."""
    keyring = _require(keyring)
    clone = CloneFile(file, env, catalog)
    _, stored = clone.read()
    # bytes in and out: click would decode the edited file itself, with a traceback if not UTF-8
    data = click.edit(clone.opened(keyring), extension=".yaml", require_save=True)
    if data is None:
        click.echo(f"{clone.path}: not changed", err=True)
        return
    edited = yamlio.load_mapping(values.decoded(data, clone.path), path=clone.path, strict=True)
    _replace(clone.file, clone.sealed(keyring, edited, stored=stored))
    click.echo(f"{clone.path}: sealed", err=True)


def _require(keyring: str | None) -> str:
    if not keyring:
        raise InvalidInput(
            "this needs a copy of the keyring: --keyring FILE or GITSTORE_KEYRING "
            "(the server never sends plain secrets for files)",
            key="keyring",
        )
    return keyring


def _emit(clone: CloneFile, data: bytes, in_place: bool) -> None:
    if in_place:
        _replace(clone.file, data)
        click.echo(f"{clone.path}: written", err=True)
    else:
        click.echo(data.decode("utf-8"), nl=False)


def _replace(path: Path, data: bytes) -> None:
    """Write atomically, keeping the file's mode."""
    mode = path.stat().st_mode & 0o777
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", dir=path.parent)
    with os.fdopen(fd, "wb") as handle:
        handle.write(data)
    os.chmod(tmp, mode)
    os.replace(tmp, path)
