"""Reading console pages in tests: rows and fields by their data attributes and classes."""

from __future__ import annotations

from html.parser import HTMLParser

#: Elements whose text the parser keeps, by class (cells of the console's tables and lists).
FIELDS = {"old", "new", "author", "message", "value", "source", "roles", "tags", "primary"}
FIELDS |= {"fqdn", "status"}


class Rows(HTMLParser):
    """Every element with a `data-*` attribute in `wanted`: its attributes and the text of
    the fields (by class) inside it, plus every href of the page."""

    def __init__(self, wanted: str) -> None:
        super().__init__()
        self.wanted = wanted
        self.rows: list[dict[str, str]] = []
        self.hrefs: list[str] = []
        self._row: dict[str, str] | None = None
        self._depth = 0
        self._field: str | None = None
        self._field_depth = 0  # the row depth of the field's element: its text ends with it
        self._fresh = False  # no text of the field's element read yet

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "a" and "href" in attrs:
            self.hrefs.append(attrs["href"])
        if self._row is None and f"data-{self.wanted}" in attrs and tag in ("tr", "li"):
            self._row = {k[5:]: v for k, v in attrs.items() if k.startswith("data-")}
            self._row["class"] = attrs.get("class") or ""
            self._depth = 0
        elif self._row is not None:
            self._depth += tag not in ("br", "input", "img")
            classes = set((attrs.get("class") or "").split())
            if classes & FIELDS and self._field is None:
                self._field = sorted(classes & FIELDS)[0]
                self._field_depth = self._depth
                self._fresh = True

    def handle_endtag(self, tag):
        if self._row is None:
            return
        if self._depth == 0:
            self.rows.append(self._row)
            self._row = None
            return
        if self._field is not None and self._depth == self._field_depth:
            self._field = None  # the field's element ends: its text is whole
        self._depth -= 1

    def handle_data(self, data):
        if self._row is not None and self._field and data.strip():
            field, old = self._field, self._row.get(self._field, "")
            # fields of a class join with a space; pieces of one (a <mark> inside) as they read
            self._row[field] = (old + " " + data.strip()).strip() if self._fresh else old + data
            self._fresh = False


def rows(client, url: str, wanted: str) -> Rows:
    response = client.get(url)
    assert response.status_code == 200, response.get_data(as_text=True)[:500]
    parser = Rows(wanted)
    parser.feed(response.get_data(as_text=True))
    return parser


class _Tree(HTMLParser):
    """The dotted paths of the leaves of a node page's values trees, in page order (a leaf's
    path is its key and those of the mappings around it)."""

    def __init__(self) -> None:
        super().__init__()
        self.paths: list[str] = []
        self._stack: list[list] = []  # [key, is a mapping] per open <details>
        self._in_summary = False
        self._in_key = False

    def handle_starttag(self, tag, attrs):
        attrs = dict(attrs)
        if tag == "details":
            self._stack.append(["", "map" in (attrs.get("class") or "").split()])
        elif tag == "summary" and self._stack:
            self._in_summary, self._key_seen = True, False
        elif tag == "code" and self._in_summary and not self._key_seen:
            self._in_key = True

    def handle_endtag(self, tag):
        if tag == "code" and self._in_key:
            self._in_key, self._key_seen = False, True
        elif tag == "summary":
            self._in_summary = False
        elif tag == "details" and self._stack:
            if not self._stack[-1][1]:
                self.paths.append(".".join(key for key, _ in self._stack))
            self._stack.pop()

    def handle_data(self, data):
        if self._in_key:
            self._stack[-1][0] += data


def leaf_paths(page: str) -> list[str]:
    parser = _Tree()
    parser.feed(page)
    return parser.paths


def leaf(path: str) -> str:
    """A Playwright selector of the leaf `path` of a values tree (the first resource's that
    has it)."""
    steps = "/ul/li/".join(f"details[summary/code[1]='{key}']" for key in path.split("."))
    return f"xpath=(//ul[contains(@class,'tree')]/li/{steps})[1]"
