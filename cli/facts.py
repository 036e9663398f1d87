"""`gitstore facts upload|download`: a node's Hiera facts to and from the store.

`upload` is the node-side deployment task of the ConfigDB: every `*.yaml` under the directory
becomes that node's values of the resource named by its relative path (`astute.yaml` ->
`astute`, `override/plugins.yaml` -> `override/plugins`), all in ONE commit. The component, its
resource definitions and the environment (hierarchy `[nodes]`) are created when missing; when
several nodes race to create them, whoever loses a creation finds the winner's and goes on.

Without `--node`, `--dir` holds one folder per node (named by id or fqdn): every node's files
land in ONE commit, and one bad file refuses them all. Facts are machine-written, so they are
read as their producers read them: a repeated key keeps its last value, with a warning naming
the file, the key path and both lines (`gitstore.factfiles`). Both forms go through
`PUT .../facts` (`gitstore.configdb.facts`), which stores a cluster's lists once.

Exit status of `upload`: 0 all files uploaded; 1 nothing uploaded (an error); 3 some files were
skipped (each reported by path on stderr) and the rest uploaded (`--node` only).
"""

from __future__ import annotations

import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import click

from cli import values
from cli.client import Client
from cli.connection import pass_client
from gitstore import yamlio
from gitstore.configdb.values import Query
from gitstore.errors import Conflict, InvalidInput, NotFound
from gitstore.factfiles import FactsReader
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
    warnings: list[str] = field(default_factory=list)
    result: Served | None = None
    #: A bulk upload's documents by node, and how many nodes and files it read.
    nodes_documents: dict[str, dict[str, dict]] = field(default_factory=dict)
    #: The file each document was read from, by (node, resource); `documents`' node is "".
    paths: dict[tuple[str, str], Path] = field(default_factory=dict)
    nodes: int = 0
    files: int = 0


def _node_callback(ctx: click.Context, param: click.Parameter, value: str | None) -> str | None:
    if value is None:
        return None
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
    callback=_node_callback,
    help="The node: its id (or fqdn, once the inventory knows it). Without it, --dir holds "
    "one folder per node.",
)
@click.option(
    "--dir",
    "directory",
    type=click.Path(exists=True, file_okay=False, path_type=Path),
    help="The node's files (default /etc/hiera); without --node, one folder per node (named "
    "by its id or fqdn) holding that node's files.",
)
@click.option(
    "--component",
    "-c",
    default="fuel",
    show_default=True,
    help="Component owning the resources (created if missing).",
)
@pass_client
def upload(
    client: Client, env_id: int, node: str | None, directory: Path | None, component: str
) -> None:
    """Upload every *.yaml under --dir as the node's values (or every node's), in one commit."""
    if node is None:
        _upload_folders(client, env_id, directory, component)
        return
    report = upload_facts(client, env_id, node, directory or DEFAULT_DIR, component)
    _warn(report)
    for path, reason in report.skipped:
        click.echo(f"skipped {path}: {reason}", err=True)
    result = report.result
    assert result is not None  # an upload that returned has its commit
    click.echo(
        f"uploaded {len(report.documents)} resources for node {node} to environment "
        f"{env_id} (version {result.version}, commit {(result.commit or '')[:12]})"
    )
    if report.skipped:
        click.echo(f"{len(report.skipped)} files skipped", err=True)
        click.get_current_context().exit(PARTIAL_EXIT)


DEFAULT_DIR = Path("/etc/hiera")


def _upload_folders(client: Client, env_id: int, directory: Path | None, component: str) -> None:
    if directory is None:
        raise click.UsageError("give --node (one node's files) or --dir with one folder per node")
    report = upload_nodes(client, env_id, directory, component)
    _warn(report)
    result = report.result
    assert result is not None  # an upload that returned has its commit
    click.echo(
        f"uploaded {report.nodes} nodes ({report.files} files) to environment {env_id} "
        f"(version {result.version}, commit {(result.commit or '')[:12]})"
    )


def _warn(report: Upload) -> None:
    for warning in report.warnings:
        click.echo(f"warning: {warning}", err=True)


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
    names = sorted(report.documents)
    message = (
        f"facts: upload {NODES_LEVEL}/{node} values ({len(names)} resources: "
        f"{', '.join(names[:5])}{', ...' if len(names) > 5 else ''})"
    )
    paths = {(node, name): path for (_, name), path in report.paths.items()}
    body = _body(message, {node: report.documents}, paths, share=False)
    report.result = _served(client.upload_facts(env_id, body))
    return report


def upload_nodes(client: Client, env_id: int, directory: Path, component: str = "fuel") -> Upload:
    """Every node folder under `directory` in one commit; one bad file refuses them all."""
    report = read_nodes(directory)
    names = sorted({name for documents in report.nodes_documents.values() for name in documents})
    component_ref = ensure_catalog(client, component, names)
    ensure_environment(client, env_id, component_ref)
    message = (
        f"facts: upload {report.nodes} nodes ({', '.join(names[:5])}"
        f"{', ...' if len(names) > 5 else ''})"
    )
    body = _body(message, report.nodes_documents, report.paths, share=True)
    report.result = _served(client.upload_facts(env_id, body))
    return report


def _body(
    message: str, nodes: dict[str, dict[str, dict]], paths: dict[tuple, Path], *, share: bool
) -> dict:
    """The body of `PUT .../facts`. A document JSON cannot carry as read (a date, a key that
    is no string) is sent as its file's text, which the server reads as the CLI did, so the
    round trip stays exact; its resource then shares nothing."""
    safety = _JsonSafety()
    as_text = {(node, name) for node, docs in nodes.items() for name, doc in docs.items()}
    as_text = {(node, name) for node, name in as_text if not safety.safe(nodes[node][name])}
    unshared = {name for _, name in as_text}
    plain = {
        node: {name: doc for name, doc in docs.items() if name not in unshared}
        for node, docs in nodes.items()
    }
    shared = _shared_entries(plain) if share else {}
    body_nodes = {}
    for node, docs in nodes.items():
        body_nodes[node] = {
            name: paths[(node, name)].read_text(encoding="utf-8")
            if (node, name) in as_text
            else values.jsonable(plain[node].get(name, doc))
            for name, doc in docs.items()
        }
    body: dict = {"message": message, "nodes": body_nodes}
    if shared:
        body["shared"] = {name: values.jsonable(entries) for name, entries in shared.items()}
    return body


class _JsonSafety:
    """Whether JSON carries a document as read, each top-level value judged once (the values
    of entries every node holds alike are shared objects)."""

    def __init__(self) -> None:
        self._judged: dict[int, bool] = {}

    def safe(self, document: dict) -> bool:
        return all(type(key) is str for key in document) and all(
            self._value(value) for value in document.values()
        )

    def _value(self, value: Any) -> bool:
        judged = self._judged.get(id(value))
        if judged is None:
            judged = self._judged[id(value)] = _json_safe(value)
        return judged


def _json_safe(value: Any) -> bool:
    stack = [value]
    while stack:
        item = stack.pop()
        kind = type(item)
        if kind is dict:
            if any(type(key) is not str for key in item):
                return False
            stack.extend(item.values())
        elif kind is list:
            stack.extend(item)
        elif kind not in _JSON_SCALARS:
            return False
    return True


_JSON_SCALARS = (str, int, float, bool, type(None))


def _served(answer: dict) -> Served:
    return Served(None, answer.get("commit"), answer.get("version"))


def read_nodes(directory: Path) -> Upload:
    """Each node folder's documents; InvalidInput naming the node and file of a bad one."""
    folders = sorted(p for p in directory.iterdir() if p.is_dir() and not p.name.startswith("."))
    if not folders:
        raise NotFound(f"no node folders under {directory} (one per node, named by id or fqdn)")
    reader = FactsReader()
    report = Upload()
    with click.progressbar(
        folders, label="reading facts", file=sys.stderr, hidden=len(folders) <= HANDFUL
    ) as bar:
        for folder in bar:
            try:
                node = check_level_value(folder.name, NODES_LEVEL)
            except InvalidInput as exc:
                raise InvalidInput(f"{folder}: not a node name: {exc.message}") from None
            report.nodes_documents[node] = _node_documents(reader, node, folder, report)
            report.files += len(report.nodes_documents[node])
    report.nodes = len(report.nodes_documents)
    return report


def _node_documents(reader: FactsReader, node: str, folder: Path, report: Upload) -> dict:
    """The node's documents by resource; InvalidInput naming node and file of a bad one."""
    files = yaml_files(folder)
    if not files:
        raise InvalidInput(f"node {node}: no *.yaml files in {folder}; nothing uploaded")
    documents = {}
    for path in files:
        try:
            name = check_resource_name(path.relative_to(folder).with_suffix("").as_posix())
            read = reader.read(path.read_bytes(), str(path))
        except InvalidInput as exc:
            reason = exc.message.removeprefix(f"{path}: ")
            raise InvalidInput(f"node {node}: {path}: {reason}; nothing uploaded") from None
        except OSError as exc:
            reason = exc.strerror or str(exc)
            raise InvalidInput(f"node {node}: {path}: {reason}; nothing uploaded") from None
        report.warnings.extend(repeat.describe(str(path)) for repeat in read.repeats)
        documents[name] = read.document
        report.paths[(node, name)] = path
    return documents


def _shared_entries(nodes: dict[str, dict[str, dict]]) -> dict[str, dict]:
    """Per resource, the top-level entries every node holding it has alike, taken out of the
    nodes' documents: the reader shares the value of a text it has seen, so `is` finds them
    without comparing (and a cluster's lists are sent once)."""
    shared: dict[str, dict] = {}
    names = {name for documents in nodes.values() for name in documents}
    for name in sorted(names):
        holders = [documents for documents in nodes.values() if name in documents]
        if len(holders) < 2:
            continue
        first = holders[0][name]
        common = {
            key: value
            for key, value in first.items()
            if all(key in other[name] and other[name][key] is value for other in holders[1:])
        }
        if common:
            shared[name] = common
            for documents in holders:
                documents[name] = {k: v for k, v in documents[name].items() if k not in common}
    return shared


def yaml_files(directory: Path) -> list[Path]:
    """Every `*.yaml` file below `directory`, sorted, hidden files and folders left out."""
    found = []
    for path in directory.rglob("*.yaml"):
        relative = path.relative_to(directory)
        if path.is_file() and not any(part.startswith(".") for part in relative.parts):
            found.append(path)
    return sorted(found)


def read_documents(directory: Path, files: list[Path]) -> Upload:
    """Parse each file as its producer would (a repeated key keeps its last value, with a
    warning); those that fail or are not mappings are skipped with a reason."""
    report = Upload()
    reader = FactsReader()
    with click.progressbar(
        files, label="reading facts", file=sys.stderr, hidden=len(files) <= HANDFUL
    ) as bar:
        for path in bar:
            relative = path.relative_to(directory)
            try:
                name = check_resource_name(relative.with_suffix("").as_posix())
                read = reader.read(path.read_bytes(), str(path))
            except InvalidInput as exc:
                # the parser's message starts with the path too: name the file once
                report.skipped.append((str(path), exc.message.removeprefix(f"{path}: ")))
                continue
            except OSError as exc:
                report.skipped.append((str(path), exc.strerror or str(exc)))
                continue
            report.warnings.extend(repeat.describe(str(path)) for repeat in read.repeats)
            report.documents[name] = read.document
            report.paths[("", name)] = path
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
