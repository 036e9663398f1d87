"""`POST /webhooks/github|gitlab|gitea`: forge events for mirrored repositories.

These routes authenticate by signature only: a request is for the mirrors whose URL the payload
names (or the environment `?env=<id>` names) and whose webhook secret verifies its signature; if
none does, the answer is 401 and nothing is fetched.

- push to the mirrored branch: fetch, gate, fast-forward `main` when the commit passes.
- pull / merge request opened or updated: review it and post the report back as a comment and a
  `gitstore/review` commit status (when the mirror has a forge API URL and token).
"""

from __future__ import annotations

from flask import Blueprint, current_app, jsonify, request

from gitstore.errors import InvalidInput, NotFound, Unauthorized
from gitstore.gitops.service import render_markdown
from gitstore.names import is_number
from webhooks import forges
from webhooks.forge_client import ForgeClient

bp = Blueprint("webhooks", __name__, url_prefix="/webhooks")


def _store():
    return current_app.extensions["gitstore"]


@bp.post("/<forge>")
def receive(forge: str):
    if forge not in forges.FORGES:
        raise NotFound(f"no webhook receiver for {forge!r}; use {', '.join(forges.FORGES)}")
    body = request.get_data()
    malformed: InvalidInput | None
    try:
        data = forges.payload(request.headers, body)
    except InvalidInput as exc:
        data, malformed = {}, exc  # answered only once the signature verifies
    else:
        malformed = None
    names = _authenticate(forge, body, forges.repository_urls(data))
    if malformed is not None:
        raise malformed
    event = forges.parse(forge, request.headers, data)
    if event.kind == forges.PUSH:
        return jsonify(event="push", repositories=[_push(name, event) for name in names])
    if event.wants_review:
        return jsonify(event="pull_request", reviews=[_review(name, event) for name in names])
    return jsonify(event=event.kind, ignored=True)


def _authenticate(forge: str, body: bytes, urls: list[str]) -> list[str]:
    """Names of the mirrors this request is for and signed by; Unauthorized if none."""
    headers = request.headers
    if not forges.has_signature(forge, headers):
        raise Unauthorized(
            f"{forge} webhook without a signature: configure the mirror's secret "
            "in the forge's webhook settings"
        )
    names = _store().gitops.authenticate_webhook(
        forge, urls, lambda secret: forges.verify(forge, headers, body, secret), _env_arg()
    )
    if not names:
        raise Unauthorized(
            f"{forge} webhook signature does not verify for any mirror of this repository"
        )
    return names


def _env_arg() -> int | None:
    raw = request.args.get("env")
    if raw is None:
        return None
    if not is_number(raw):
        raise InvalidInput(
            f"query parameter 'env' must be an environment id, not {raw!r}", key="env"
        )
    return int(raw)


def _push(name: str, event: forges.Event) -> dict:
    gitops = _store().gitops
    if event.ref != f"refs/heads/{gitops.branch_of(name)}":
        return {**gitops.status_of(name), "ignored": f"{event.ref} is not the mirrored branch"}
    return gitops.sync(name)


def _review(name: str, event: forges.Event) -> dict:
    gitops = _store().gitops
    review = gitops.review_pull_request(
        name, event.number, event.head_ref, event.base_branch, event.base_sha, event.head_sha
    )
    api_url, token = gitops.forge_api(name)
    posted = bool(api_url and token and event.api_repo)
    if posted:
        assert api_url and token and event.api_repo and event.number is not None  # a review's
        client = ForgeClient(event.forge, api_url, token)
        client.comment(event.api_repo, event.number, render_markdown(review))
        report = review.report
        summary = (
            "valid" if report["valid"] else f"{len(report['errors'])} problems"
        ) + f"; {len(report['nodes_affected'])} nodes affected"
        client.status(event.api_repo, review.head, report["valid"], summary)
    return {
        "repository": name,
        "base": review.base,
        "head": review.head,
        "posted": posted,
        **review.report,
    }
