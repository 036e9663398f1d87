"""`gitstore backup`, `restore`, `fsck`, `maintenance`, `migrate` and `cluster key`: operations
on a store root.

They work on folders, never through a server; `backup` and `fsck` may run while the store is
served. The work is `gitstore.ops` (docs/operations.md).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import click

from cli.server import store_root
from gitstore.cluster.secret import KEY_FILE as CLUSTER_KEY_FILE
from gitstore.cluster.secret import create as create_cluster_secret
from gitstore.errors import GitstoreError

PASSPHRASE_ENV = "GITSTORE_BACKUP_PASSPHRASE"


def register(group: click.Group) -> None:
    group.add_command(backup)
    group.add_command(restore)
    group.add_command(fsck)
    group.add_command(maintenance)
    group.add_command(migrate)
    group.add_command(cluster)


def _passphrase(path: str | None, needed: bool) -> bytes | None:
    """The passphrase from --passphrase-file (first line), else $GITSTORE_BACKUP_PASSPHRASE."""
    phrase: bytes | None
    if path:
        lines = Path(path).read_bytes().splitlines()
        phrase = lines[0] if lines else b""
    else:
        phrase = os.environ.get(PASSPHRASE_ENV, "").encode() or None
    if needed and not phrase:
        raise click.UsageError(f"give the passphrase with --passphrase-file or ${PASSPHRASE_ENV}")
    return phrase


_root_option = click.option(
    "--root",
    "root_opt",
    type=click.Path(file_okay=False),
    help="Store root (default: the group's --root / $GITSTORE_ROOT).",
)
_passphrase_option = click.option(
    "--passphrase-file",
    type=click.Path(dir_okay=False, exists=True),
    help=f"File whose first line is the keyring's passphrase (default: ${PASSPHRASE_ENV}).",
)


@click.command()
@_root_option
@click.option(
    "--to",
    "target",
    required=True,
    type=click.Path(file_okay=False),
    help="New (or empty) folder to write the backup into.",
)
@click.option(
    "--include-keyring",
    is_flag=True,
    help="Also copy the keyring, encrypted with the passphrase (without it, sealed secrets "
    "cannot be read after a restore).",
)
@_passphrase_option
def backup(
    root_opt: str | None, target: str, include_keyring: bool, passphrase_file: str | None
) -> None:
    """Copy a store (live or not) into --to: a git bundle per repository, the access file,
    and with --include-keyring the keyring encrypted with a passphrase."""
    from gitstore.ops.backup import backup as take

    phrase = _passphrase(passphrase_file, needed=True) if include_keyring else None
    manifest = take(store_root(root_opt), Path(target), phrase)
    for entry in manifest["repositories"]:
        click.echo(f"{entry['name']}: main {entry['main'][:12]}")
    extras = [name for name in ("access", "keyring") if manifest[name]]
    click.echo(f"backup written to {target}" + (f" (with {', '.join(extras)})" if extras else ""))


@click.command()
@click.option(
    "--from",
    "source",
    required=True,
    type=click.Path(file_okay=False, exists=True),
    help="Folder written by gitstore backup.",
)
@_root_option
@_passphrase_option
def restore(source: str, root_opt: str | None, passphrase_file: str | None) -> None:
    """Build a new store at --root (absent or empty) from the backup in --from."""
    from gitstore.ops.backup import read_manifest
    from gitstore.ops.backup import restore as rebuild

    needed = bool(read_manifest(Path(source))["keyring"])
    manifest = rebuild(Path(source), store_root(root_opt), _passphrase(passphrase_file, needed))
    click.echo(f"restored {len(manifest['repositories'])} repositories into {store_root(root_opt)}")
    if not manifest["keyring"]:
        click.echo(
            "the backup has no keyring: a new one was made; copy the original keyring.yaml "
            "into the new root to read sealed secrets (gitstore fsck names them)",
            err=True,
        )


@click.command()
@_root_option
@click.option("--format", "fmt", type=click.Choice(("text", "json")), default="text")
@click.pass_context
def fsck(ctx: click.Context, root_opt: str | None, fmt: str) -> None:
    """Check a whole store: git fsck of every repository, the push gate's rules on every head,
    left-over locks and half-made repositories, and that the keyring opens every sealed value
    (never printed). Exits 1 naming each problem, 0 when the store is sound."""
    from gitstore import Store
    from gitstore.ops.fsck import fsck as check

    root = store_root(root_opt)
    Store(root).check()
    problems = check(root)
    if fmt == "json":
        click.echo(json.dumps([p.__dict__ for p in problems], indent=2))
    else:
        for problem in problems:
            click.echo(str(problem))
        click.echo(f"{len(problems)} problem(s)" if problems else f"{root}: no problems found")
    ctx.exit(1 if problems else 0)


@click.command()
@_root_option
@click.option("-e", "--env", "env_id", type=click.IntRange(min=1), help="Only this environment.")
@click.option("--dry-run", is_flag=True, help="Only show each repository's usage.")
@click.option("--format", "fmt", type=click.Choice(("text", "json")), default="text")
def maintenance(root_opt: str | None, env_id: int | None, dry_run: bool, fmt: str) -> None:
    """Pack loose objects and write the commit-graph of every repository (or only --env's)
    now, as the server does in the background; safe while the store is served."""
    from gitstore import Store
    from gitstore.ops.maintenance import maintain_store

    root = store_root(root_opt)
    Store(root).check()
    only = None if env_id is None else f"environments/{env_id}.git"
    reports = maintain_store(root, only=only, dry_run=dry_run, force=True)
    if only is not None and not reports:
        raise click.ClickException(f"environment {env_id} does not exist")
    if fmt == "json":
        click.echo(json.dumps([r.as_dict() for r in reports], indent=2))
        return
    for report in reports:
        click.echo(_maintenance_line(report, dry_run))
    if any(report.errors for report in reports):
        raise click.ClickException("; ".join(e for r in reports for e in r.errors))


@click.command()
@_root_option
@click.option("--dry-run", is_flag=True, help="Only list the steps.")
def migrate(root_opt: str | None, dry_run: bool) -> None:
    """Move a store of an older format (read-only until then) to this gitstore's format, each
    repository atomically, after a backup of what changes; refused while a server serves it."""
    from gitstore.ops.migrate import migrate as migrate_store

    root = store_root(root_opt)
    report = migrate_store(root, dry_run=dry_run)
    if report.from_format == report.to_format:
        click.echo(f"{root} already has format {report.to_format}: nothing to do")
        return
    verb = "would move" if dry_run else "moved"
    click.echo(f"{verb} {root} from format {report.from_format} to {report.to_format}:")
    for step in report.steps:
        click.echo(f"  {step}")
    if report.backup:
        click.echo(f"what changed was copied first to {report.backup}")


def _maintenance_line(report, dry_run: bool) -> str:
    before, after = report.before, report.after or report.before
    if dry_run:
        usage = f"{before.loose} loose objects, {before.packs} packs, {before.size} bytes"
        return f"{report.name}: {usage}; due: {', '.join(report.due) or 'nothing'}"
    if report.skipped:
        return f"{report.name}: skipped ({report.skipped})"
    return (
        f"{report.name}: {', '.join(report.tasks)}: {before.loose} -> {after.loose} loose objects, "
        f"{before.packs} -> {after.packs} packs, {before.size} -> {after.size} bytes "
        f"({report.seconds:.1f}s)"
    )


@click.group()
def cluster() -> None:
    """What a store root needs to be a cluster member (docs/ha.md)."""


@cluster.command("key")
@_root_option
def cluster_key(root_opt: str | None) -> None:
    """Make the cluster secret members sign their calls with: <root>/cluster.key, mode 0600.

    Run it once, then install the same file on every member (like keyring.yaml). Refuses to
    replace an existing secret.
    """
    root = store_root(root_opt)
    try:
        path = create_cluster_secret(root / CLUSTER_KEY_FILE)
    except (GitstoreError, OSError) as exc:
        raise click.ClickException(getattr(exc, "message", None) or str(exc)) from None
    click.echo(f"wrote {path}: copy it to every member of the cluster (mode 0600)")
