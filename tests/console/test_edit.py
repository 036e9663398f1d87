"""Editing from the console: preview (diff, nodes affected, the gate's messages), save as one
commit by the signed-in user conditional on the previewed version, revert, reveal, and what
a reader or a forged form gets."""

from __future__ import annotations

import re

import pytest

from console.forms import ALICE, csrf_of, form_token, guarded_client, sign_in

NODE = "/ui/environments/1/nodes/1"
EDIT = NODE + "/edit"
EFFECTIVE = "/api/v1/config/environments/1/nodes/{node}/resources/astute/values?effective"


@pytest.fixture
def guarded(tmp_path):
    return guarded_client(tmp_path / "store")


def _effective(client, node) -> dict:
    response = client.get(EFFECTIVE.format(node=node))
    assert response.status_code == 200, response.get_json()
    return response.get_json()


def _edit(client, action="preview", **fields) -> dict:
    data = {"resource": "astute", "key": "net.mtu", "level": "0", "op": "set", "value": "1400"}
    data.update(fields)
    data["action"] = action
    data.setdefault("csrf_token", form_token(client, EDIT + "?resource=astute&key=net.mtu"))
    return data


def _commits(store) -> int:
    return store.environment_repo(1).snapshot().version


def _objects(store) -> set[str]:
    """Every loose object and pack file of the store's repositories."""
    return {str(path) for path in store.root.glob("**/objects/**/*") if path.is_file()}


def _affected(page: str) -> list[str]:
    return re.findall(r'<tr data-node="([^"]+)">', page)


def test_a_reader_sees_no_edit_control_and_a_forged_edit_is_403(guarded):
    store, client = guarded
    sign_in(client, "reader")
    page = client.get(NODE).get_data(as_text=True)
    assert "/edit" not in page and 'class="edit"' not in page
    why = client.get(NODE + "/why?resource=astute&key=net.mtu&fragment=1")
    assert why.status_code == 200 and "/edit" not in why.get_data(as_text=True)
    assert "Revert" not in client.get("/ui/environments/1").get_data(as_text=True)
    assert client.get(EDIT).status_code == 403
    before = _commits(store)
    token = form_token(client, NODE)
    data = {"resource": "astute", "key": "net.mtu", "level": "0", "op": "set", "value": "1"}
    for action in ("preview", "save"):
        response = client.post(EDIT, data={**data, "action": action, "csrf_token": token})
        assert response.status_code == 403, action
    assert _commits(store) == before


@pytest.mark.parametrize("token", [None, "wrong"])
def test_an_edit_without_the_right_csrf_token_is_403(guarded, token):
    store, client = guarded
    sign_in(client, "writer1")
    before = _commits(store)
    data = _edit(client, "save", base=store.environment_repo(1).head())
    if token is None:
        del data["csrf_token"]
    else:
        data["csrf_token"] = token
    assert client.post(EDIT, data=data).status_code == 403
    assert _commits(store) == before


def test_a_writer_edits_previews_and_saves_one_commit_as_themself(guarded):
    store, client = guarded
    sign_in(client, "writer1")
    why = client.get(NODE + "/why?resource=astute&key=net.mtu&fragment=1").get_data(as_text=True)
    assert 'href="/ui/environments/1/nodes/1/edit?resource=astute&amp;key=net.mtu"' in why
    form = client.get(EDIT + "?resource=astute&key=net.mtu").get_data(as_text=True)
    assert ">1500</textarea>" in form  # the effective value to start from
    before = {node: _effective(client, node) for node in (1, 2, 3)}
    head = store.environment_repo(1).head()

    preview = client.post(EDIT, data=_edit(client))
    assert preview.status_code == 200
    shown = preview.get_data(as_text=True)
    assert store.environment_repo(1).head() == head  # a preview commits nothing
    assert "global/overrides/astute.yaml" in shown
    assert "<code>1500</code> → <code>1400</code>" in shown
    assert _affected(shown) == ["1", "2"]  # node 3 overrides mtu itself
    save = dict(_edit(client, "save"), base=csrf_base(shown))

    saved = client.post(EDIT, data=save)
    assert saved.status_code == 303, saved.get_data(as_text=True)[:500]
    repo = store.environment_repo(1)
    assert repo.parent(repo.head()) == head  # exactly one commit
    info = repo.snapshot().info()
    assert info.author == "writer1" and "net.mtu" in info.message
    assert saved.headers["Location"] == f"{NODE}?saved={repo.head()}"
    after = {node: _effective(client, node) for node in (1, 2, 3)}
    changed = sorted(str(n) for n in after if after[n] != before[n])
    assert changed == _affected(shown)  # the preview named what REST shows changed
    assert after[1]["net"]["mtu"] == 1400 and after[3]["net"]["mtu"] == 9000


def csrf_base(page: str) -> str:
    return re.search(r'name="base" value="([0-9a-f]{40})"', page).group(1)


def test_delete_at_the_node_level(guarded):
    store, client = guarded
    sign_in(client, "writer1")
    token = form_token(client, "/ui/environments/1/nodes/3/edit?resource=astute&key=net.mtu")
    data = _edit(client, op="delete", level="1", csrf_token=token)
    url = "/ui/environments/1/nodes/3/edit"
    shown = client.post(url, data=data).get_data(as_text=True)
    assert _affected(shown) == ["3"]
    saved = client.post(url, data=dict(data, action="save", base=csrf_base(shown)))
    assert saved.status_code == 303
    assert _effective(client, 3)["net"]["mtu"] == 1500


def test_the_gate_refusal_shows_inline_and_commits_nothing(guarded):
    store, client = guarded
    sign_in(client, "writer1")
    before = _commits(store)
    preview = client.post(EDIT, data=_edit(client, value="big"))
    assert preview.status_code == 422
    page = preview.get_data(as_text=True)
    assert 'class="problem"' in page and "integer" in page
    assert 'value="save"' not in page  # nothing to save
    forced = client.post(
        EDIT, data=_edit(client, "save", value="big", base=store.environment_repo(1).head())
    )
    assert forced.status_code == 422 and "integer" in forced.get_data(as_text=True)
    assert _commits(store) == before


def test_bad_fields_are_named_inline(guarded):
    _, client = guarded
    sign_in(client, "writer1")
    page = client.post(EDIT, data=_edit(client, key="a..b", level="7", value="[1, 2")).get_data(
        as_text=True
    )
    assert "not a dotted path" in page and "level &#39;7&#39; is not" in page and "value:" in page


@pytest.mark.parametrize("level", ["\u00b2", "\u0663", "-1", " 0"])
def test_a_level_that_is_not_ascii_digits_is_named_inline(guarded, level):
    # `'²'.isdigit()` holds and `int('²')` fails: a 500; `'٣'` was read as level 3.
    _, client = guarded
    sign_in(client, "writer1")
    response = client.get(EDIT, query_string={"level": level})
    assert response.status_code == 200, response.get_data(as_text=True)[:300]
    assert "is not one of this node&#39;s levels" in response.get_data(as_text=True)
    page = client.post(EDIT, data=_edit(client, level=level)).get_data(as_text=True)
    assert "is not one of this node&#39;s levels" in page


def test_a_stale_preview_is_refused_and_shown_again(guarded):
    store, client = guarded
    sign_in(client, "writer1")
    shown = client.post(EDIT, data=_edit(client)).get_data(as_text=True)
    base = csrf_base(shown)
    # someone else changes the same document meanwhile
    store.config.update_keys(1, [], "astute", "overrides", "set", [["net", "vlan", 20]], ALICE)
    concurrent = store.environment_repo(1).head()
    refused = client.post(EDIT, data=_edit(client, "save", base=base))
    assert refused.status_code == 409
    page = refused.get_data(as_text=True)
    assert "Not saved" in page and "changed since version" in page
    assert store.environment_repo(1).head() == concurrent  # theirs kept, ours not written
    assert csrf_base(page) == concurrent  # the fresh preview, ready to save again
    assert ">1400</textarea>" in page  # the value typed is not lost
    again = client.post(EDIT, data=_edit(client, "save", base=csrf_base(page)))
    assert again.status_code == 303
    assert _effective(client, 1)["net"] == {"mtu": 1400, "vlan": 20}


def test_an_unrelated_commit_does_not_make_a_preview_stale(guarded):
    store, client = guarded
    sign_in(client, "writer1")
    base = csrf_base(client.post(EDIT, data=_edit(client)).get_data(as_text=True))
    store.config.put(1, [("nodes", "2")], "astute", "values", {"other": 1}, ALICE)
    assert client.post(EDIT, data=_edit(client, "save", base=base)).status_code == 303


def test_the_edit_and_revert_pages_write_no_object(guarded):
    """DESIGN "Reads never write": only a preview (a POST by a writer) builds a commit."""
    store, client = guarded
    sign_in(client, "writer1")
    edit = store.config.update_keys(
        1, [], "astute", "overrides", "set", [["net", "mtu", 1000]], ALICE
    )
    before = _objects(store)
    for url in (
        EDIT + "?resource=astute&key=net.mtu",
        f"/ui/environments/1/commits/{edit.commit}/revert",
    ):
        assert client.get(url).status_code == 200, url
        assert _objects(store) == before, url


def _preview_revert(client, url: str):
    """GET the revert page (the commit and its form), then POST its preview button."""
    page = client.get(url).get_data(as_text=True)
    return client.post(url, data={"csrf_token": csrf_of(page), "action": "preview"})


def test_revert_previews_then_makes_one_commit_restoring_the_values(guarded):
    store, client = guarded
    sign_in(client, "writer1")
    edit = store.config.update_keys(
        1, [], "astute", "overrides", "set", [["net", "mtu", 1000]], ALICE
    )
    env_page = client.get("/ui/environments/1").get_data(as_text=True)
    url = f"/ui/environments/1/commits/{edit.commit}/revert"
    assert f'href="{url}"' in env_page
    form = client.get(url)
    assert form.status_code == 200
    shown = form.get_data(as_text=True)
    assert edit.commit[:12] in shown and "net.mtu" in shown  # the commit being reverted
    assert 'name="action" value="preview"' in shown and 'name="base"' not in shown
    preview = _preview_revert(client, url)
    assert preview.status_code == 200
    page = preview.get_data(as_text=True)
    assert _affected(page) == ["1", "2"]
    assert "<code>1000</code> → <code>1500</code>" in page
    assert store.environment_repo(1).head() == edit.commit  # a preview commits nothing
    save = {"csrf_token": csrf_of(page), "action": "save", "base": csrf_base(page)}
    done = client.post(url, data=save)
    assert done.status_code == 303
    repo = store.environment_repo(1)
    assert repo.parent(repo.head()) == edit.commit
    assert repo.snapshot().info().author == "writer1"
    assert _effective(client, 1)["net"]["mtu"] == 1500


def test_a_stale_revert_is_refused(guarded):
    store, client = guarded
    sign_in(client, "writer1")
    document = {"a": 1, "b": 2, "c": 3, "d": 4, "net": {"mtu": 1000}}
    store.config.put(1, [], "astute", "overrides", document, ALICE)
    edit = store.config.update_keys(
        1, [], "astute", "overrides", "set", [["net", "mtu", 1001]], ALICE
    )
    url = f"/ui/environments/1/commits/{edit.commit}/revert"
    page = _preview_revert(client, url).get_data(as_text=True)
    store.config.update_keys(1, [], "astute", "overrides", "set", [["a", 9]], ALICE)
    head = store.environment_repo(1).head()
    save = {"csrf_token": csrf_of(page), "action": "save", "base": csrf_base(page)}
    refused = client.post(url, data=save)
    assert refused.status_code == 409 and "Not saved" in refused.get_data(as_text=True)
    assert store.environment_repo(1).head() == head
    assert csrf_base(refused.get_data(as_text=True)) == head  # a fresh preview to save


def test_a_revert_without_csrf_or_by_a_reader_is_403(guarded):
    store, client = guarded
    edit = store.config.update_keys(
        1, [], "astute", "overrides", "set", [["net", "mtu", 1000]], ALICE
    )
    url = f"/ui/environments/1/commits/{edit.commit}/revert"
    before = _objects(store)
    sign_in(client, "writer1")
    for action in ("preview", "save"):
        assert client.post(url, data={"action": action, "base": edit.commit}).status_code == 403
    reader = client.application.test_client()
    sign_in(reader, "reader")
    assert reader.get(url).status_code == 403
    token = form_token(reader, "/ui/environments/1")
    for action in ("preview", "save"):
        data = {"csrf_token": token, "action": action, "base": edit.commit}
        assert reader.post(url, data=data).status_code == 403
    assert store.environment_repo(1).head() == edit.commit
    assert _objects(store) == before  # not even a preview's dry run


def test_reveal_is_offered_to_the_secrets_role_only(guarded):
    _, client = guarded
    sign_in(client, "writer1")
    page = client.get(NODE).get_data(as_text=True)
    assert "Reveal secrets" not in page and "hunter2-secret" not in page
    assert client.get(NODE + "?reveal=1").status_code == 403
    keeper = client.application.test_client()
    sign_in(keeper, "keeper")
    page = keeper.get(NODE).get_data(as_text=True)
    assert 'href="/ui/environments/1/nodes/1?reveal=1"' in page and "hunter2-secret" not in page
    revealed = keeper.get(NODE + "?reveal=1")
    assert revealed.status_code == 200 and "hunter2-secret" in revealed.get_data(as_text=True)
    assert revealed.headers["Cache-Control"] == "private, no-store"


def test_an_open_store_edits_as_console_without_signing_in(client, fuel_store):
    fuel_store.config.put(1, [], "astute", "values", {"net": {"mtu": 1500}}, ALICE)
    fuel_store.config.put(1, [("nodes", "1")], "astute", "values", {"x": 1}, ALICE)
    page = client.get(NODE).get_data(as_text=True)
    assert "Sign in" not in page and 'class="edit"' in page
    token = form_token(client, EDIT)
    data = {"resource": "astute", "key": "net.mtu", "level": "0", "op": "set", "value": "1400"}
    shown = client.post(EDIT, data=dict(data, csrf_token=token, action="preview"))
    base = csrf_base(shown.get_data(as_text=True))
    saved = client.post(EDIT, data=dict(data, csrf_token=token, action="save", base=base))
    assert saved.status_code == 303
    assert fuel_store.environment_repo(1).snapshot().info().author == "console"
    # a form posted from another site (no token) is refused on an open store too
    assert client.post(EDIT, data=dict(data, action="save", base=base)).status_code == 403
