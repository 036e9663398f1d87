"""Webhook requests as GitHub, GitLab and Gitea send them.

Payloads follow the forges' documented schemas (GitHub "push" and "pull_request" events, GitLab
"Push Hook" and "Merge Request Hook", Gitea "push" and "pull_request"), trimmed to a realistic
subset of fields; headers and signatures are the ones each forge sends.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import uuid

OWNER_REPO = "ops/env-1"
GITLAB_PROJECT = 15
PR_NUMBER = 7


def _github_repository(url: str) -> dict:
    return {
        "id": 1296269,
        "node_id": "MDEwOlJlcG9zaXRvcnkxMjk2MjY5",
        "name": "env-1",
        "full_name": OWNER_REPO,
        "private": True,
        "owner": {"login": "ops", "id": 1},
        "html_url": "https://github.com/ops/env-1",
        "clone_url": url,
        "git_url": "git://github.com/ops/env-1.git",
        "ssh_url": "git@github.com:ops/env-1.git",
        "default_branch": "main",
    }


def _gitea_repository(url: str) -> dict:
    return {
        "id": 12,
        "owner": {"id": 3, "login": "ops", "username": "ops"},
        "name": "env-1",
        "full_name": OWNER_REPO,
        "private": True,
        "html_url": "https://gitea.example/ops/env-1",
        "ssh_url": "git@gitea.example:ops/env-1.git",
        "clone_url": url,
        "default_branch": "main",
    }


def _gitlab_project(url: str) -> dict:
    return {
        "id": GITLAB_PROJECT,
        "name": "env-1",
        "web_url": "https://gitlab.example/ops/env-1",
        "git_ssh_url": "git@gitlab.example:ops/env-1.git",
        "git_http_url": url,
        "namespace": "ops",
        "path_with_namespace": OWNER_REPO,
        "default_branch": "main",
    }


def push_payload(forge: str, url: str, before: str, after: str, ref: str = "refs/heads/main"):
    commit = {
        "id": after,
        "message": "change values\n",
        "timestamp": "2024-05-01T10:00:00Z",
        "author": {"name": "Alice", "email": "alice@example.com"},
    }
    if forge == "gitlab":
        return {
            "object_kind": "push",
            "event_name": "push",
            "before": before,
            "after": after,
            "ref": ref,
            "checkout_sha": after,
            "user_id": 4,
            "user_name": "Alice",
            "user_username": "alice",
            "project_id": GITLAB_PROJECT,
            "project": _gitlab_project(url),
            "repository": {
                "name": "env-1",
                "url": "git@gitlab.example:ops/env-1.git",
                "homepage": "https://gitlab.example/ops/env-1",
                "git_http_url": url,
                "git_ssh_url": "git@gitlab.example:ops/env-1.git",
            },
            "commits": [commit],
            "total_commits_count": 1,
        }
    repository = _github_repository(url) if forge == "github" else _gitea_repository(url)
    return {
        "ref": ref,
        "before": before,
        "after": after,
        "created": False,
        "deleted": False,
        "forced": False,
        "compare": "https://forge.example/compare",
        "commits": [commit],
        "head_commit": commit,
        "repository": repository,
        "pusher": {"name": "alice", "email": "alice@example.com"},
        "sender": {"login": "alice", "id": 2},
    }


def pull_request_payload(forge: str, url: str, base: str, head: str, action: str = "opened"):
    if forge == "gitlab":
        return {
            "object_kind": "merge_request",
            "event_type": "merge_request",
            "user": {"id": 4, "name": "Alice", "username": "alice"},
            "project": _gitlab_project(url),
            "object_attributes": {
                "id": 99,
                "iid": PR_NUMBER,
                "target_branch": "main",
                "source_branch": "change",
                "source_project_id": 15,
                "target_project_id": 15,
                "state": "opened",
                "title": "Change values",
                "action": action,
                "last_commit": {"id": head, "message": "change\n"},
                "url": "https://gitlab.example/ops/env-1/-/merge_requests/7",
            },
            "repository": {
                "name": "env-1",
                "url": "git@gitlab.example:ops/env-1.git",
                "homepage": "https://gitlab.example/ops/env-1",
            },
        }
    repository = _github_repository(url) if forge == "github" else _gitea_repository(url)
    return {
        "action": action,
        "number": PR_NUMBER,
        "pull_request": {
            "id": 1,
            "number": PR_NUMBER,
            "state": "open",
            "title": "Change values",
            "user": {"login": "alice"},
            "head": {"label": "ops:change", "ref": "change", "sha": head, "repo": repository},
            "base": {"label": "ops:main", "ref": "main", "sha": base, "repo": repository},
        },
        "repository": repository,
        "sender": {"login": "alice", "id": 2},
    }


def headers(forge: str, body: bytes, secret: str | None, event: str) -> dict[str, str]:
    """The headers each forge sends; `secret` None sends no signature at all."""
    found = {"Content-Type": "application/json"}
    if forge == "github":
        found.update(
            {
                "X-GitHub-Event": event,
                "X-GitHub-Delivery": str(uuid.uuid4()),
                "User-Agent": "GitHub-Hookshot/044aadd",
            }
        )
        if secret is not None:
            found["X-Hub-Signature-256"] = "sha256=" + _hmac(secret, body)
    elif forge == "gitea":
        found.update(
            {"X-Gitea-Event": event, "X-Gitea-Delivery": str(uuid.uuid4()), "X-GitHub-Event": event}
        )
        if secret is not None:
            found["X-Gitea-Signature"] = _hmac(secret, body)
    else:
        found.update(
            {
                "X-Gitlab-Event": {"push": "Push Hook", "pull_request": "Merge Request Hook"}[
                    event
                ],
                "X-Gitlab-Instance": "https://gitlab.example",
            }
        )
        if secret is not None:
            found["X-Gitlab-Token"] = secret
    return found


def encode(payload: dict) -> bytes:
    return json.dumps(payload).encode("utf-8")


def _hmac(secret: str, body: bytes) -> str:
    return hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
