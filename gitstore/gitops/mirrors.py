"""Mirror settings: which repositories follow a branch of a forge, and how each sync went.

Settings live in `<root>/gitops/mirrors.json` (mode 0600: it holds the webhook secret and the
forge token), never in a served repository; the outcome of every sync in
`<root>/gitops/state/`. Every write through the facade asks `check_writable` (a `stat` of the
settings file), because a commit made here to a mirrored repository would stop every later
sync.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path

from gitstore import files
from gitstore.backend import remote
from gitstore.errors import Conflict, InvalidInput, NotFound
from gitstore.layout import environment_repository, parse_repository_name

GITOPS_DIR = "gitops"
MIRRORS_FILE = "mirrors.json"
STATE_DIR = "state"
FORGES = ("github", "gitlab", "gitea")
_BRANCH = re.compile(r"^(?!-)(?!.*\.\.)[A-Za-z0-9._/-]{1,200}$")
_SECRET_FIELDS = ("webhook_secret", "api_token")


class MirrorSettings:
    """The mirror settings and sync states of one store root."""

    def __init__(self, root: Path) -> None:
        self.folder = Path(root) / GITOPS_DIR
        self._watched = files.WatchedFile(self.folder / MIRRORS_FILE, lambda _: self.all())

    def mirror_of(self, name: str) -> dict | None:
        """The mirror settings of repository `name` (`environments/1.git`), None if it has none.

        Costs a `stat` of the settings file: every write through the facade asks.
        """
        return (self._watched.current() or {}).get(name)

    def check_writable(self, name: str) -> None:
        """Refuse a write through the facade to a repository in mirror mode: the forge is its
        source of truth, and a commit made here would stop every later sync (the remote branch
        would no longer contain the served commit)."""
        mirror = self.mirror_of(name)
        if mirror is not None:
            raise Conflict(
                f"{name} mirrors {remote.redact(mirror['url'])} (branch "
                f"{mirror['branch']}): change it there, the store follows it; or "
                "`gitstore mirror remove` first"
            )

    def add(
        self,
        name: str,
        url: str,
        *,
        secret: str,
        branch: str = "main",
        forge: str | None = None,
        api_url: str | None = None,
        api_token: str | None = None,
    ) -> dict:
        """Make repository `name` follow `branch` of `url` (replacing earlier settings)."""
        target = parse_repository_name(name)
        settings = _check_mirror(url, branch, secret, forge, api_url, api_token)
        with self._settings_lock():
            mirrors = self.all()
            mirrors[target.name] = settings
            _write_private(self.folder / MIRRORS_FILE, {"mirrors": mirrors})
        return public_settings(target.name, settings)

    def remove(self, name: str) -> None:
        target = parse_repository_name(name)
        with self._settings_lock():
            mirrors = self.all()
            if mirrors.pop(target.name, None) is None:
                raise NotFound(f"{target.name} has no mirror")
            _write_private(self.folder / MIRRORS_FILE, {"mirrors": mirrors})

    def public(self) -> list[dict]:
        """Every mirror, secrets masked."""
        return [public_settings(name, s) for name, s in sorted(self.all().items())]

    def all(self) -> dict[str, dict]:
        try:
            data = json.loads((self.folder / MIRRORS_FILE).read_text())
        except FileNotFoundError:
            return {}
        except ValueError as exc:
            raise InvalidInput(f"{self.folder / MIRRORS_FILE} is not valid JSON: {exc}") from exc
        return dict(data.get("mirrors") or {})

    def get(self, name: str) -> dict:
        settings = self.all().get(name)
        if settings is None:
            raise NotFound(f"{name} has no mirror (gitstore mirror add)")
        return settings

    @contextlib.contextmanager
    def _settings_lock(self) -> Iterator[None]:
        self.folder.mkdir(mode=0o700, exist_ok=True)
        with files.exclusive_lock(self.folder / ".lock"):
            yield

    def authenticate_webhook(
        self, forge: str, urls: list[str], verify: Callable[[str], bool], env_id: int | None = None
    ) -> list[str]:
        """Mirrors a forge event is for and whose webhook secret `verify` accepts.

        Candidates are the mirrors of `forge` (or of no forge) whose URL is one of `urls`, or
        the mirror of environment `env_id` when the webhook URL names it.
        """
        wanted = {_normal_url(u) for u in urls if u}
        found = []
        for name, settings in sorted(self.all().items()):
            if settings.get("forge") not in (None, forge):
                continue
            by_env = env_id is not None and name == environment_repository(env_id)
            if (by_env or _normal_url(settings["url"]) in wanted) and verify(
                settings["webhook_secret"]
            ):
                found.append(name)
        return found

    def forge_api(self, name: str) -> tuple[str | None, str | None]:
        """The forge REST base URL and token configured for mirror `name`."""
        settings = self.get(name)
        return settings.get("api_url"), settings.get("api_token")

    def branch_of(self, name: str) -> str:
        return self.get(name)["branch"]

    # -- sync states -----------------------------------------------------------------------
    def _state_path(self, name: str) -> Path:
        return self.folder / STATE_DIR / (name.replace("/", "_") + ".json")

    def state(self, name: str) -> dict:
        try:
            return json.loads(self._state_path(name).read_text())
        except (FileNotFoundError, ValueError):
            return {}

    def record(self, name: str, state: dict) -> None:
        path = self._state_path(name)
        path.parent.mkdir(parents=True, exist_ok=True, mode=0o700)
        _write_private(path, state)


def check_branch(branch: str) -> str:
    if not isinstance(branch, str) or not _BRANCH.match(branch):
        raise InvalidInput(f"branch {branch!r} is not a valid branch name", key="branch")
    return branch


def _check_mirror(
    url: str,
    branch: str,
    secret: str,
    forge: str | None,
    api_url: str | None,
    api_token: str | None,
) -> dict:
    if not url or not isinstance(url, str) or url.startswith("-"):
        raise InvalidInput("the mirror URL must be a git URL", key="url")
    if not secret:
        raise InvalidInput("a webhook secret is required (--webhook-secret)", key="webhook_secret")
    if forge is not None and forge not in FORGES:
        raise InvalidInput(f"forge {forge!r} is not one of {', '.join(FORGES)}", key="forge")
    settings = {
        "url": url,
        "branch": check_branch(branch),
        "forge": forge,
        "webhook_secret": secret,
        "api_url": api_url,
        "api_token": api_token,
    }
    return {k: v for k, v in settings.items() if v is not None}


def public_settings(name: str, settings: dict) -> dict:
    shown = {"repository": name, **settings, "url": remote.redact(settings["url"])}
    for key in _SECRET_FIELDS:
        if shown.get(key):
            shown[key] = "***"
    return shown


def _normal_url(url: str) -> str:
    url = remote.redact(url.strip()).replace("***@", "").rstrip("/")
    return url.removesuffix(".git").lower()


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds").replace("+00:00", "Z")


def _write_private(path: Path, data: dict) -> None:
    """Write JSON atomically, readable by the owner only (it may hold secrets)."""
    files.write_private(path, json.dumps(data, indent=2, sort_keys=True).encode())
