"""`gitstore user add|remove|list|passwd|roles` and `gitstore token create|list|revoke`.

These are store-admin commands: they edit `<root>/access.yaml` on the store's host (`--root`),
never through a server. Access control is on as soon as the first user is added. A running
server notices every change at once, in every worker.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from cli.output import emit, table
from gitstore import Store
from gitstore.access.policy import AccessFile, parse_grants
from gitstore.errors import InvalidInput

FORMATS = ("table", "json", "yaml")


def register(group: click.Group) -> None:
    group.add_command(user)
    group.add_command(token)


def _access(root_opt: str | None) -> AccessFile:
    """The access file of the command's --root, else the group's; a usage error if neither."""
    ctx = click.get_current_context()
    root = root_opt or ctx.find_root().params.get("root")
    if not root:
        raise click.UsageError(
            "--root (or GITSTORE_ROOT) is required: users and tokens are "
            "managed on the store's host",
            ctx=ctx,
        )
    Store(Path(root)).check()
    return AccessFile(Path(root))


_root_option = click.option(
    "--root",
    "root_opt",
    type=click.Path(file_okay=False),
    help="Store root (default: the group's --root / $GITSTORE_ROOT).",
)
_role_option = click.option(
    "--role",
    "roles",
    multiple=True,
    required=True,
    metavar="ROLE[:SCOPE]",
    help="reader, writer, admin or secrets; scope '*' (default) or env:ID, e.g. writer:env:1. "
    "Repeat for several.",
)
_format_option = click.option(
    "--format", "fmt", type=click.Choice(FORMATS), default="table", show_default=True
)


def _password(password_stdin: bool) -> str:
    """The new password: one line of stdin, or typed twice at a prompt."""
    if password_stdin:
        password = sys.stdin.readline().rstrip("\r\n")
    else:
        password = click.prompt("Password", hide_input=True, confirmation_prompt=True)
    if not password:
        raise InvalidInput("the password is empty", key="password")
    return password


def _grants(roles: tuple[str, ...]):
    try:
        return parse_grants(roles)
    except InvalidInput as exc:
        raise click.BadParameter(exc.message, param_hint="--role") from None


# -- users ----------------------------------------------------------------------------------
@click.group()
def user() -> None:
    """Manage users of the access file (access control is on once one exists)."""


@user.command("add")
@click.argument("name")
@_role_option
@click.option("--password-stdin", is_flag=True, help="Read the password from stdin's first line.")
@click.option(
    "--no-password",
    is_flag=True,
    help="A user without password, for tokens only (service accounts).",
)
@_root_option
def add_user(
    name: str, roles: tuple[str, ...], password_stdin: bool, no_password: bool, root_opt: str | None
) -> None:
    """Add user NAME with its roles; prompts for a password unless told otherwise."""
    if password_stdin and no_password:
        raise click.UsageError("give --password-stdin or --no-password, not both")
    access = _access(root_opt)
    grants = _grants(roles)
    access.add_user(name, grants, None if no_password else _password(password_stdin))
    click.echo(
        f"added user {name} ({', '.join(map(str, grants))}); access control is on ({access.path})",
        err=True,
    )


@user.command("remove")
@click.argument("name")
@_root_option
def remove_user(name: str, root_opt: str | None) -> None:
    """Remove user NAME and revoke all their tokens."""
    revoked = _access(root_opt).remove_user(name)
    click.echo(f"removed user {name}; revoked {revoked} token(s)", err=True)


@user.command("list")
@_format_option
@_root_option
def list_users(fmt: str, root_opt: str | None) -> None:
    """List users, their roles and token counts (never a password or hash)."""
    users = _access(root_opt).users()
    if fmt != "table":
        emit(users, fmt)
        return
    rows = [(u["name"], u["roles"], "yes" if u["password"] else "no", u["tokens"]) for u in users]
    click.echo(table(rows, ["name", "roles", "password", "tokens"]))


@user.command("passwd")
@click.argument("name")
@click.option("--password-stdin", is_flag=True, help="Read the password from stdin's first line.")
@_root_option
def passwd(name: str, password_stdin: bool, root_opt: str | None) -> None:
    """Set the password of user NAME."""
    access = _access(root_opt)
    access.set_password(name, _password(password_stdin))
    click.echo(f"password of {name} changed", err=True)


@user.command("roles")
@click.argument("name")
@_role_option
@_root_option
def set_roles(name: str, roles: tuple[str, ...], root_opt: str | None) -> None:
    """Replace the roles of user NAME (effective at once, for their tokens too)."""
    grants = _grants(roles)
    _access(root_opt).set_roles(name, grants)
    click.echo(f"roles of {name}: {', '.join(map(str, grants))}", err=True)


# -- tokens ---------------------------------------------------------------------------------
@click.group()
def token() -> None:
    """Manage API tokens (sent as 'Authorization: Bearer <token>' or 'X-Auth-Token')."""


@token.command("create")
@click.option("--user", "user_name", required=True, help="The user the token acts as.")
@click.option("--name", "label", help="A label to recognise the token by in `token list`.")
@_root_option
def create_token(user_name: str, label: str | None, root_opt: str | None) -> None:
    """Create a token and print it alone on stdout: it is shown this once, never again."""
    token_id, secret = _access(root_opt).create_token(user_name, label)
    click.echo(secret)
    click.echo(f"token {token_id} created for {user_name}; store it now, it is not kept", err=True)


@token.command("list")
@click.option("--user", "user_name", help="Only the tokens of this user.")
@_format_option
@_root_option
def list_tokens(user_name: str | None, fmt: str, root_opt: str | None) -> None:
    """List token ids, users, labels and creation times (never the tokens)."""
    tokens = _access(root_opt).tokens(user_name)
    if fmt != "table":
        emit(tokens, fmt)
        return
    rows = [(t["id"], t["user"], t["name"], t["created"]) for t in tokens]
    click.echo(table(rows, ["id", "user", "name", "created"]))


@token.command("revoke")
@click.argument("token_id", metavar="ID")
@_root_option
def revoke_token(token_id: str, root_opt: str | None) -> None:
    """Revoke token ID: every server worker refuses it from the next request on."""
    _access(root_opt).revoke_token(token_id)
    click.echo(f"revoked token {token_id}", err=True)
