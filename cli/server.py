"""`gitstore init` and `gitstore serve`."""

from __future__ import annotations

import click


def register(group: click.Group) -> None:
    group.add_command(init)


@click.command()
@click.option("--root", "root_opt", envvar="GITSTORE_ROOT", required=True,
              type=click.Path(file_okay=False), help="Store root to create.")
def init(root_opt: str) -> None:
    """Create a store (catalog.git and environments/) at --root."""
    from gitstore.store import Store

    Store.init(root_opt)
    click.echo(f"initialised gitstore at {root_opt}")
