"""What GitHub, GitLab and Gitea send: signature checks and the events we act on.

Pure functions of the request headers and raw body (no Flask), so they can be tested with the
forges' documented payloads alone.

- GitHub signs the raw body with HMAC-SHA256: `X-Hub-Signature-256: sha256=<hex>`.
- Gitea signs the same way: `X-Gitea-Signature: <hex>` (newer versions also send GitHub's header).
- GitLab sends the shared secret itself: `X-Gitlab-Token: <secret>`.
"""

from __future__ import annotations

import hashlib
import hmac
import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, TypeAlias
from urllib.parse import parse_qs

from gitstore.errors import InvalidInput
from gitstore.gitops.mirrors import FORGES

if TYPE_CHECKING:
    from werkzeug.datastructures import Headers

#: A request's headers: Flask's, or a plain mapping.
HeadersLike: TypeAlias = "Mapping[str, str] | Headers"

GITHUB, GITLAB, GITEA = FORGES
PUSH, PULL_REQUEST, PING, OTHER = "push", "pull_request", "ping", "other"

#: Pull-request actions that bring new commits to review.
_REVIEW_ACTIONS = {"opened", "reopened", "synchronize", "synchronized", "open", "reopen", "update"}
_EVENT_HEADERS = {GITHUB: "X-GitHub-Event", GITEA: "X-Gitea-Event", GITLAB: "X-Gitlab-Event"}
_URL_FIELDS = (
    "clone_url",
    "ssh_url",
    "git_url",
    "html_url",
    "git_http_url",
    "git_ssh_url",
    "http_url",
    "ssh_url_to_repo",
    "http_url_to_repo",
    "web_url",
    "url",
    "homepage",
)


@dataclass(frozen=True)
class Event:
    """A forge event reduced to what gitstore needs."""

    forge: str
    kind: str
    repo_urls: list[str] = field(default_factory=list)
    ref: str | None = None  # push: the updated ref
    number: int | None = None  # pull request number (GitLab: the merge request iid)
    action: str | None = None
    head_ref: str | None = None  # the ref holding the pull request's head at the forge
    head_sha: str | None = None
    base_branch: str | None = None
    base_sha: str | None = None
    api_repo: str | None = None  # `owner/name` (GitHub, Gitea) or the project id (GitLab)

    @property
    def wants_review(self) -> bool:
        return self.kind == PULL_REQUEST and self.action in _REVIEW_ACTIONS


# -- signatures -----------------------------------------------------------------------------
def has_signature(forge: str, headers: HeadersLike) -> bool:
    return any(headers.get(name) for name in _signature_headers(forge))


def _signature_headers(forge: str) -> tuple[str, ...]:
    return {
        GITHUB: ("X-Hub-Signature-256",),
        GITLAB: ("X-Gitlab-Token",),
        GITEA: ("X-Gitea-Signature", "X-Hub-Signature-256"),
    }[forge]


def verify(forge: str, headers: HeadersLike, body: bytes, secret: str) -> bool:
    """Whether the request carries a valid signature (or token) for `secret`."""
    if forge == GITLAB:
        token = headers.get("X-Gitlab-Token") or ""
        return hmac.compare_digest(token.encode(), secret.encode())
    expected = hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    gitea = headers.get("X-Gitea-Signature") if forge == GITEA else None
    if gitea:
        return _same_hex(gitea.strip().lower(), expected)
    given = (headers.get("X-Hub-Signature-256") or "").strip()
    return given.startswith("sha256=") and _same_hex(given[7:].lower(), expected)


def _same_hex(given: str, expected: str) -> bool:
    """Constant-time equality; a header with non-ASCII text (which `compare_digest` refuses
    to compare as str) is simply a signature that does not verify."""
    return given.isascii() and hmac.compare_digest(given, expected)


# -- payloads -------------------------------------------------------------------------------
def payload(headers: HeadersLike, body: bytes) -> dict:
    """The JSON payload (GitHub may also send it form-encoded as `payload=`)."""
    text = body.decode("utf-8", errors="replace")
    if (headers.get("Content-Type") or "").startswith("application/x-www-form-urlencoded"):
        text = (parse_qs(text).get("payload") or [""])[0]
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise InvalidInput(f"webhook payload is not JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise InvalidInput("webhook payload must be a JSON object")
    return data


def repository_urls(data: dict) -> list[str]:
    """Every URL by which the payload names its repository."""
    urls = []
    for holder in (data.get("repository"), data.get("project")):
        if isinstance(holder, dict):
            urls += [holder[k] for k in _URL_FIELDS if isinstance(holder.get(k), str)]
    return urls


def parse(forge: str, headers: HeadersLike, data: dict) -> Event:
    """The event a payload describes; unknown kinds are OTHER (acknowledged, ignored)."""
    kind = _kind(forge, headers, data)
    urls = repository_urls(data)
    if kind == PUSH:
        return Event(forge, PUSH, urls, ref=_text(data, "ref"))
    if kind == PULL_REQUEST:
        reader = _gitlab_merge_request if forge == GITLAB else _pull_request
        return reader(forge, data, urls)
    return Event(forge, kind, urls)


def _kind(forge: str, headers: HeadersLike, data: dict) -> str:
    name = (headers.get(_EVENT_HEADERS[forge]) or "").strip().lower()
    if forge == GITLAB:
        name = str(data.get("object_kind") or name.removesuffix(" hook").replace(" ", "_"))
    return {
        "push": PUSH,
        "pull_request": PULL_REQUEST,
        "merge_request": PULL_REQUEST,
        "ping": PING,
    }.get(name, OTHER)


def _pull_request(forge: str, data: dict, urls: list[str]) -> Event:
    pr = _mapping(data, "pull_request")
    number = _integer(data.get("number", pr.get("number")), "number")
    head, base = _mapping(pr, "head"), _mapping(pr, "base")
    repo = _mapping(data, "repository")
    return Event(
        forge,
        PULL_REQUEST,
        urls,
        number=number,
        action=_text(data, "action"),
        head_ref=f"refs/pull/{number}/head",
        head_sha=_text(head, "sha"),
        base_branch=_text(base, "ref"),
        base_sha=_text(base, "sha"),
        api_repo=_text(repo, "full_name"),
    )


def _gitlab_merge_request(forge: str, data: dict, urls: list[str]) -> Event:
    attrs = _mapping(data, "object_attributes")
    number = _integer(attrs.get("iid"), "object_attributes.iid")
    diff_refs, last = attrs.get("diff_refs"), attrs.get("last_commit")
    diff_refs = diff_refs if isinstance(diff_refs, dict) else {}
    last = last if isinstance(last, dict) else {}
    project = _mapping(data, "project")
    return Event(
        forge,
        PULL_REQUEST,
        urls,
        number=number,
        action=_text(attrs, "action"),
        head_ref=f"refs/merge-requests/{number}/head",
        head_sha=_text(diff_refs, "head_sha") or _text(last, "id"),
        base_branch=_text(attrs, "target_branch"),
        base_sha=_text(diff_refs, "base_sha"),
        api_repo=str(project.get("id")) if project.get("id") is not None else None,
    )


def _mapping(data: dict, key: str) -> dict:
    value = data.get(key)
    if not isinstance(value, dict):
        raise InvalidInput(f"webhook payload: field {key!r} must be an object", key=key)
    return value


def _text(data: dict, key: str) -> str | None:
    value = data.get(key)
    return value if isinstance(value, str) and value else None


def _integer(value: Any, key: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidInput(f"webhook payload: field {key!r} must be a positive integer", key=key)
    return value
