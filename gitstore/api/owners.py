"""Routes that exist once per kind of owner: graphs and tags belong to releases, plugins and
clusters alike (`/releases/<id>/tags`, `/plugins/<id>/tags`, `/clusters/<id>/tags`)."""

from __future__ import annotations

from flask import Blueprint

#: URL segment -> the owner kind the services speak.
OWNER_KINDS = {"releases": "release", "plugins": "plugin", "clusters": "cluster"}


def each_owner(bp: Blueprint, rule: str, methods: list[str]):
    """Register a view for `/{releases|plugins|clusters}/<owner_id><rule>` on `bp`, as one
    literal path per kind; the view gets the kind as `owner` (`"release"`, ...)."""

    def register(view):
        for segment, kind in OWNER_KINDS.items():
            bp.add_url_rule(
                f"/{segment}/<int:owner_id>{rule}",
                f"{view.__name__}_{segment}",
                view,
                methods=methods,
                defaults={"owner": kind},
            )
        return view

    return register
