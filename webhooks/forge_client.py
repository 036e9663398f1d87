"""A small client of the forges' REST APIs: post a review as a comment and a commit status.

Standard library only (`urllib`). The base URL is the API root configured with the mirror:
`https://api.github.com`, `https://gitlab.example.com/api/v4`, `https://gitea.example.com/api/v1`.
"""

from __future__ import annotations

import json
import ssl
import urllib.error
import urllib.request
from urllib.parse import quote

from gitstore.errors import Unavailable
from webhooks.forges import GITEA, GITHUB, GITLAB

CONTEXT = "gitstore/review"
TIMEOUT_SECONDS = 10
_DESCRIPTION_LIMIT = 140  # GitHub refuses longer status descriptions


class ForgeClient:
    """Comments and commit statuses on one forge, authenticated with one token."""

    def __init__(
        self,
        forge: str,
        api_url: str,
        token: str,
        *,
        cafile: str | None = None,
        timeout: float = TIMEOUT_SECONDS,
    ) -> None:
        if forge not in (GITHUB, GITLAB, GITEA):
            raise ValueError(f"unknown forge {forge!r}")
        self.forge = forge
        self.api_url = api_url.rstrip("/")
        self._token = token
        self._timeout = timeout
        self._context = ssl.create_default_context(cafile=cafile) if cafile else None

    def comment(self, repo: str, number: int, body: str) -> None:
        """Add a comment to pull request (GitLab: merge request) `number` of `repo`."""
        if self.forge == GITLAB:
            path = f"/projects/{quote(repo, safe='')}/merge_requests/{int(number)}/notes"
        else:
            path = f"/repos/{_owner_name(repo)}/issues/{int(number)}/comments"
        self._post(path, {"body": body})

    def status(self, repo: str, sha: str, ok: bool, description: str) -> None:
        """Set the `gitstore/review` commit status of `sha`."""
        description = description[:_DESCRIPTION_LIMIT]
        if self.forge == GITLAB:
            path = f"/projects/{quote(repo, safe='')}/statuses/{quote(sha, safe='')}"
            payload = {
                "state": "success" if ok else "failed",
                "name": CONTEXT,
                "description": description,
            }
        else:
            path = f"/repos/{_owner_name(repo)}/statuses/{quote(sha, safe='')}"
            payload = {
                "state": "success" if ok else "failure",
                "context": CONTEXT,
                "description": description,
            }
        self._post(path, payload)

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json", "User-Agent": "gitstore"}
        if self.forge == GITLAB:
            headers["PRIVATE-TOKEN"] = self._token
        elif self.forge == GITEA:
            headers["Authorization"] = f"token {self._token}"
        else:
            headers["Authorization"] = f"Bearer {self._token}"
            headers["Accept"] = "application/vnd.github+json"
            headers["X-GitHub-Api-Version"] = "2022-11-28"
        return headers

    def _post(self, path: str, payload: dict) -> None:
        request = urllib.request.Request(
            self.api_url + path,
            method="POST",
            data=json.dumps(payload).encode("utf-8"),
            headers=self._headers(),
        )
        try:
            with urllib.request.urlopen(
                request, timeout=self._timeout, context=self._context
            ) as response:
                response.read()
        except urllib.error.HTTPError as exc:
            raise Unavailable(
                f"{self.forge} API {path} answered {exc.code}: "
                f"{exc.read()[:200].decode('utf-8', 'replace')}"
            ) from exc
        except (urllib.error.URLError, OSError) as exc:
            raise Unavailable(f"{self.forge} API at {self.api_url} is unreachable: {exc}") from exc


def _owner_name(repo: str) -> str:
    owner, _, name = repo.partition("/")
    if not owner or not name:
        raise ValueError(f"repository {repo!r} must be owner/name")
    return f"{quote(owner, safe='')}/{quote(name, safe='')}"
