"""`gitstore facts upload|download`: a node's Hiera facts to and from the store.

`upload` is the node-side deployment task of the ConfigDB: every `*.yaml` under the directory
becomes that node's values of the resource named by its relative path (`astute.yaml` ->
`astute`, `override/plugins.yaml` -> `override/plugins`), all in ONE commit. The component, its
resource definitions and the environment (hierarchy `[nodes]`) are created when missing; when
several nodes race to create them, whoever loses a creation finds the winner's and goes on.

Exit status of `upload`: 0 all files uploaded; 1 nothing uploaded (an error); 3 some files were
skipped (each reported by path on stderr) and the rest uploaded.
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path

import click

from cli import values
from cli.client import Client
from cli.connection import pass_client
from gitstore import Query, yamlio
from gitstore.errors import Conflict, InvalidInput, NotFound
from gitstore.layout import NODES_LEVEL
from gitstore.names import check_level_value, check_resource_name
from gitstore.served import Served

PARTIAL_EXIT = 3
#: More files than this get a progress bar.
HANDFUL = 5


def register(group: click.Group) -> None:
    group.add_command(facts)


@click.group()
def facts() -> None:
    """Upload a node's facts (/etc/hiera) or download its effective values as files."""


@dataclass
class Upload:
    """What an upload read, skipped and wrote."""

    documents: dict[str, dict] = field(default_factory=dict)
    skipped: list[tuple[str, str]] = field(default_factory=list)
    result: Served | None = None


def _node_callback(ctx: click.Context, param: click.Parameter, value: str) -> str:
    try:
        return check_level_value(value, NODES_LEVEL)
    except InvalidInput as exc:
        raise click.BadParameter(exc.message, ctx, param) from None


@facts.command("upload")
@click.option(
    "--env",
    "-e",
    "env_id",
    type=values.ENV_ID,
    required=True,
    help="Environment id (created with hierarchy [nodes] if missing).",
)
@click.option(
    "--node",
    "-n",
    required=True,
    callback=_node_callback,
    help="The node: its id (or fqdn, once the inventory knows it).",
)
@click.option(
    "--dir",
    "directory",
    default="/etc/hiera",
    show_default=True,
    type=click.Path(exists=True, file_okay=False, path_type=Path),
)
@click.option(
    "--component",
    "-c",
    default="fuel",
    show_default=True,
    help="Component owning the resources (created if missing).",
)
@pass_client
def upload(client: Client, env_id: int, node: str, directory: Path, component: str) -> None:
    """Upload every *.yaml under --dir as the node's values, in one commit."""
    report = upload_facts(client, env_id, node, directory, component)
    for path, reason in report.skipped:
        click.echo(f"skipped {path}: {reason}", err=True)
    result = report.result
    click.echo(
        f"uploaded {len(report.documents)} resources for node {node} to environment "
        f"{env_id} (version {result.version}, commit {(result.commit or '')[:12]})"
    )
    if report.skipped:
        click.echo(f"{len(report.skipped)} files skipped", err=True)
        click.get_current_context().exit(PARTIAL_EXIT)


def upload_facts(
    client: Client, env_id: int, node: str, directory: Path, component: str = "fuel"
) -> Upload:
    """Read the directory, create what is missing, write every document in one commit."""
    files = yaml_files(directory)
    if not files:
        raise NotFound(f"no *.yaml files under {directory}")
    report = read_documents(directory, files)
    if not report.documents:
        reasons = "; ".join(f"{path}: {why}" for path, why in report.skipped)
        raise InvalidInput(f"nothing to upload from {directory}: {reasons}")
    component_ref = ensure_catalog(client, component, sorted(report.documents))
    ensure_environment(client, env_id, component_ref)
    pairs = ((NODES_LEVEL, node),)
    batch = {(pairs, name, "values"): doc for name, doc in sorted(report.documents.items())}
    message = (
        f"facts: upload {NODES_LEVEL}/{node} values ({len(batch)} resources: "
        f"{', '.join(sorted(report.documents)[:5])}{', ...' if len(batch) > 5 else ''})"
    )
    report.result = client.write_many(env_id, batch, message)
    return report


def yaml_files(directory: Path) -> list[Path]:
    """Every `*.yaml` file below `directory`, sorted, hidden files and folders left out."""
    found = []
    for path in directory.rglob("*.yaml"):
        relative = path.relative_to(directory)
        if path.is_file() and not any(part.startswith(".") for part in relative.parts):
            found.append(path)
    return sorted(found)


def read_documents(directory: Path, files: list[Path]) -> Upload:
    """Parse each file; those that fail or are not mappings are skipped with a reason."""
    report = Upload()
    with click.progressbar(
        files, label="reading facts", file=sys.stderr, hidden=len(files) <= HANDFUL
    ) as bar:
        for path in bar:
            relative = path.relative_to(directory)
            try:
                name = check_resource_name(relative.with_suffix("").as_posix())
                text = values.decoded(path.read_bytes(), str(path))
                document = yamlio.load_mapping(text, path=str(path), strict=True)
            except InvalidInput as exc:
                # the parser's message starts with the path too: name the file once
                report.skipped.append((str(path), exc.message.removeprefix(f"{path}: ")))
                continue
            except OSError as exc:
                report.skipped.append((str(path), exc.strerror or str(exc)))
                continue
            report.documents[name] = values.jsonable(document)
    return report


def ensure_catalog(client: Client, component: str, resources: list[str]) -> int:
    """The id of `component`, created with `resources` (or given the missing ones)."""
    existing = {d["name"]: d for d in client.list_definitions()}
    found = _component_named(client, component)
    if found is None:
        missing = [{"name": name} for name in resources if name not in existing]
        try:
            found = client.create_component({"name": component, "resource_definitions": missing})
        except Conflict:
            found = _component_named(client, component)  # another node created it first
            if found is None:
                raise
        existing = {d["name"]: d for d in client.list_definitions()}
    for name in resources:
        if name not in existing:
            _create_definition(client, name, found["id"])
    return found["id"]


def _component_named(client: Client, name: str) -> dict | None:
    return next((c for c in client.list_components() if c["name"] == name), None)


def _create_definition(client: Client, name: str, component_id: int) -> None:
    try:
        client.create_definition({"name": name, "component_id": component_id})
    except Conflict:
        if not any(d["name"] == name for d in client.list_definitions()):
            raise  # not a lost race: something else is wrong


def ensure_environment(client: Client, env_id: int, component_id: int) -> None:
    """Create the environment (hierarchy [nodes]) or attach the component if it is missing."""
    try:
        env = client.get_environment(env_id)
    except NotFound:
        body = {"id": env_id, "components": [component_id], "hierarchy_levels": [NODES_LEVEL]}
        try:
            env = client.create_environment(body)
            click.echo(
                f"created environment {env_id} (hierarchy [{NODES_LEVEL}], component "
                f"{component_id}): it did not exist",
                err=True,
            )
        except Conflict:
            env = client.get_environment(env_id)  # another node created it first
    if component_id not in env["components"]:
        client.update_environment(env_id, {"components": env["components"] + [component_id]})
        click.echo(f"attached component {component_id} to environment {env_id}", err=True)


@facts.command("download")
@click.option("--env", "-e", "env_id", type=values.ENV_ID, required=True, help="Environment id.")
@click.option("--node", "-n", required=True, callback=_node_callback, help="Node id or fqdn.")
@click.option(
    "--dir",
    "directory",
    required=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Where to write files.",
)
@click.option(
    "--version", callback=values.version_callback, help="Read at a version: N or a git revision."
)
@click.option(
    "--reveal",
    is_flag=True,
    help="Write secrets in plain text (needs the secrets role; the reveal is audited).",
)
@pass_client
def download(
    client: Client, env_id: int, node: str, directory: Path, version: str | None, reveal: bool
) -> None:
    """Write the node's effective values as <resource>.yaml files (empty ones left out).

    Secrets are written as ****** unless --reveal: such files cannot deploy a node.
    """
    download = download_facts(client, env_id, node, directory, version, reveal)
    click.echo(f"wrote {len(download.written)} files to {directory}")
    if download.masked:
        click.echo(
            f"warning: {download.masked} secret values were written masked as ******; "
            "use --reveal (needs the secrets role) for files that can deploy the node",
            err=True,
        )


@dataclass
class Download:
    """The files a download wrote and how many secret values in them are masked."""

    written: list[Path] = field(default_factory=list)
    masked: int = 0


def download_facts(
    client: Client,
    env_id: int,
    node: str,
    directory: Path,
    version: str | None = None,
    reveal: bool = False,
) -> Download:
    """Each resource of the environment's components with data for the node, as a file."""
    env = client.get_environment(env_id, version)
    names = sorted(
        d["name"] for d in client.list_definitions() if d["component_id"] in env["components"]
    )
    download = Download()
    for name in names:
        query = Query(effective=True, version=version, reveal=reveal)
        answer = client.read_served(env_id, [(NODES_LEVEL, node)], name, "values", query)
        if answer.data:
            download.written.append(_write_file(directory, check_resource_name(name), answer.data))
            download.masked += len(answer.masked)
    return download


def _write_file(directory: Path, name: str, data: dict) -> Path:
    """Write atomically: a reader (Puppet) never sees half a file."""
    target = directory / f"{name}.yaml"
    target.parent.mkdir(parents=True, exist_ok=True)
    temporary = target.with_name(f".{target.name}.tmp")
    try:
        temporary.write_bytes(yamlio.dump(data))
        os.replace(temporary, target)
    except OSError as exc:
        raise click.ClickException(f"cannot write {target}: {exc.strerror or exc}") from exc
    return target
