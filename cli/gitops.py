"""`gitstore validate`, `gitstore review` and `gitstore mirror add|list|remove|sync`.

These work on folders, never through a server: `validate` and `review` on a store root
(`--root`) or on any clone of a repository (`--repo`, what a CI job has), `mirror` on a store
root. `review` and `validate` exit 1 when validation fails, so they gate a CI pipeline.
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from cli import values
from cli.output import table

FORMATS = ("text", "json")


def register(group: click.Group) -> None:
    group.add_command(validate)
    group.add_command(review)
    group.add_command(mirror)


def _store(root_opt: str | None):
    """The store at the command's --root, else the group's; a usage error if neither."""
    from gitstore import Store

    ctx = click.get_current_context()
    root = root_opt or ctx.find_root().params.get("root")
    if not root:
        raise click.UsageError("--root (or GITSTORE_ROOT) is required", ctx=ctx)
    store = Store(Path(root))
    store.check()
    return store


_root_option = click.option(
    "--root",
    "root_opt",
    type=click.Path(file_okay=False),
    help="Store root (default: the group's --root / $GITSTORE_ROOT).",
)
_catalog_option = click.option(
    "--catalog",
    "catalog_path",
    type=click.Path(exists=True, file_okay=False),
    help="A clone of the catalog to check environments against (default: the store's own "
    "catalog when --repo lives in a store; else catalog checks are skipped).",
)


def _repository_name(env_id: int | None, catalog: bool) -> str:
    from gitstore.layout import environment_repository

    if (env_id is None) == (not catalog):
        raise click.UsageError("give exactly one of --env ID and --catalog")
    return "catalog.git" if catalog or env_id is None else environment_repository(env_id)


# -- validate -------------------------------------------------------------------------------
@click.command()
@_root_option
@click.option(
    "--repo",
    "repo_path",
    type=click.Path(exists=True, file_okay=False),
    help="Validate this repository (bare or a clone) instead of a whole store.",
)
@_catalog_option
@click.option("--format", "fmt", type=click.Choice(FORMATS), default="text", show_default=True)
@click.argument("revision", required=False)
@click.pass_context
def validate(
    ctx: click.Context,
    root_opt: str | None,
    repo_path: str | None,
    catalog_path: str | None,
    fmt: str,
    revision: str | None,
) -> None:
    """Check REVISION (default: main / HEAD) with the rules of the push gate; exit 1 if invalid.

    Without --repo, every repository of the store at --root is checked.
    """
    from gitstore.gitops.service import validate_repository

    if repo_path:
        results = {repo_path: validate_repository(repo_path, revision, catalog_path)}
    else:
        results = _store(root_opt).gitops.validate_all(revision)
    _print_problems(results, fmt)
    ctx.exit(1 if any(results.values()) else 0)


def _print_problems(results: dict[str, list[dict]], fmt: str) -> None:
    from gitstore.validation import format_problem

    if fmt == "json":
        click.echo(
            json.dumps({"valid": not any(results.values()), "repositories": results}, indent=2)
        )
        return
    for name, problems in results.items():
        count = len(problems)
        verdict = "valid" if not count else f"{count} problem{'s' if count != 1 else ''}"
        click.echo(f"{name}: {verdict}")
        for problem in problems:
            click.echo(f"  {format_problem(problem)}")


# -- review ---------------------------------------------------------------------------------
@click.command()
@click.argument("base")
@click.argument("head")
@click.option(
    "--repo",
    "repo_path",
    type=click.Path(exists=True, file_okay=False),
    help="The repository (bare or a clone; default: the current folder).",
)
@click.option(
    "--env",
    "-e",
    "env_id",
    type=values.ENV_ID,
    help="Review environment ID of the store at --root instead of --repo.",
)
@_root_option
@_catalog_option
@click.option(
    "--format",
    "fmt",
    type=click.Choice(["markdown", "json"]),
    default="markdown",
    show_default=True,
)
@click.pass_context
def review(
    ctx: click.Context,
    base: str,
    head: str,
    repo_path: str | None,
    env_id: int | None,
    root_opt: str | None,
    catalog_path: str | None,
    fmt: str,
) -> None:
    """Report what going from BASE to HEAD does; exit 1 when HEAD fails validation.

    The report: validation problems, effective keys added/removed/changed per scope, the nodes
    whose effective values change, and the changed override files.
    """
    from gitstore.gitops.service import render_markdown, review_repository
    from gitstore.layout import environment_repository

    if env_id is not None and repo_path:
        raise click.UsageError("give --repo or --env, not both")
    if env_id is not None:
        result = _store(root_opt).gitops.review_in_store(environment_repository(env_id), base, head)
    else:
        result = review_repository(repo_path or ".", base, head, catalog_path)
    if fmt == "json":
        click.echo(json.dumps(result.report, indent=2, default=str))
    else:
        click.echo(render_markdown(result))
    ctx.exit(0 if result.report["valid"] else 1)


# -- mirror ---------------------------------------------------------------------------------
@click.group()
def mirror() -> None:
    """Make a repository follow a forge (mirror mode): add, list, remove, sync."""


@mirror.command("add")
@click.argument("url")
@click.option("--env", "-e", "env_id", type=values.ENV_ID, help="Environment to mirror.")
@click.option("--catalog", is_flag=True, help="Mirror the catalog instead.")
@click.option("--branch", default="main", show_default=True, help="Remote branch to serve.")
@click.option(
    "--webhook-secret",
    required=True,
    envvar="GITSTORE_WEBHOOK_SECRET",
    help="Shared secret of the forge webhook ($GITSTORE_WEBHOOK_SECRET).",
)
@click.option(
    "--forge",
    type=click.Choice(["github", "gitlab", "gitea"]),
    help="Accept webhooks from this forge only.",
)
@click.option("--api-url", help="Forge REST API base URL, to post pull-request reviews.")
@click.option(
    "--api-token", envvar="GITSTORE_FORGE_TOKEN", help="Forge API token ($GITSTORE_FORGE_TOKEN)."
)
@_root_option
def mirror_add(
    url: str,
    env_id: int | None,
    catalog: bool,
    branch: str,
    webhook_secret: str,
    forge: str | None,
    api_url: str | None,
    api_token: str | None,
    root_opt: str | None,
) -> None:
    """Serve BRANCH of URL: webhooks (or --poll) fetch it; commits that pass the gate are served."""
    name = _repository_name(env_id, catalog)
    shown = _store(root_opt).gitops.add_mirror(
        name,
        url,
        secret=webhook_secret,
        branch=branch,
        forge=forge,
        api_url=api_url,
        api_token=api_token,
    )
    click.echo(f"{name} now mirrors {shown['url']} ({shown['branch']})")


@mirror.command("list")
@click.option(
    "--format", "fmt", type=click.Choice(["table", "json"]), default="table", show_default=True
)
@_root_option
def mirror_list(fmt: str, root_opt: str | None) -> None:
    """List mirrors (secrets are never shown)."""
    found = _store(root_opt).gitops.mirrors()
    if fmt == "json":
        click.echo(json.dumps(found, indent=2))
        return
    columns = ["repository", "url", "branch", "forge", "api_url"]
    click.echo(table([[m.get(c) for c in columns] for m in found], columns))


@mirror.command("remove")
@click.option("--env", "-e", "env_id", type=values.ENV_ID)
@click.option("--catalog", is_flag=True)
@_root_option
def mirror_remove(env_id: int | None, catalog: bool, root_opt: str | None) -> None:
    """Stop mirroring (the served data stays as it is)."""
    name = _repository_name(env_id, catalog)
    _store(root_opt).gitops.remove_mirror(name)
    click.echo(f"{name} no longer mirrors a remote")


@mirror.command("sync")
@click.option("--env", "-e", "env_id", type=values.ENV_ID)
@click.option("--catalog", is_flag=True)
@_root_option
@click.pass_context
def mirror_sync(
    ctx: click.Context, env_id: int | None, catalog: bool, root_opt: str | None
) -> None:
    """Fetch now (one mirror, or all without --env/--catalog); exit 1 if a commit was refused."""
    gitops = _store(root_opt).gitops
    if env_id is None and not catalog:
        results = gitops.sync_all()
    else:
        results = [gitops.sync(_repository_name(env_id, catalog))]
    for status in results:
        failure = status["failure"]
        served = (status["served_commit"] or "-")[:12]
        click.echo(
            f"{status['repository']}: serving {served}"
            + (f"; refused: {failure['message']}" if failure else "")
        )
    ctx.exit(1 if any(s["failure"] for s in results) else 0)
