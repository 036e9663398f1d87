"""Revealed documents are kept by immutable ids: the same answers, every reveal audited, and a
sealed value still opens only at its own place and with keys that exist."""

from __future__ import annotations

from secrets_helpers import PASSWORD

from gitstore.backend.changes import ChangeSet

HIERA = "/api/v1/hiera/1/{node}"
NODE = "/api/v1/config/environments/1/nodes/{node}/resources/astute/values"


def test_a_repeated_reveal_is_the_same_and_audited_each_time(fuel_store, with_password):
    answers = [with_password.get(HIERA.format(node=1)) for _ in range(3)]
    assert {a.status_code for a in answers} == {200}
    assert answers[0].get_data() == answers[1].get_data() == answers[2].get_data()
    assert answers[0].json["resources"]["astute"]["nova"]["db_password"] == PASSWORD
    entries = fuel_store.secrets.audit.entries()
    assert [e["paths"] for e in entries[-3:]] == [["resources.astute.nova.db_password"]] * 3


def test_a_kept_reveal_ends_with_the_keyring(fuel_store, with_password):
    assert with_password.get(NODE.format(node=1) + "?effective&reveal").status_code == 200
    assert with_password.get(HIERA.format(node=1)).status_code == 200
    fuel_store.secrets.keyring.path.unlink()
    assert with_password.get(NODE.format(node=1) + "?effective&reveal").status_code == 503
    hiera = with_password.get(HIERA.format(node=1))
    assert hiera.status_code == 503 and PASSWORD not in hiera.get_data(as_text=True)


def test_a_rotated_keyring_reveals_the_same_values(fuel_store, with_password):
    before = with_password.get(NODE.format(node=1) + "?effective&reveal").json
    fuel_store.secrets.rotate()
    after = with_password.get(NODE.format(node=1) + "?effective&reveal").json
    assert after == before and after["nova"]["db_password"] == PASSWORD


def test_a_ciphertext_copied_to_another_node_does_not_open_there(fuel_store, with_password):
    """Node 2's layers are the same blobs as node 1's, at other files: a reveal kept for node 1
    must not answer for node 2, where the value was not sealed."""
    assert (
        with_password.put(NODE.format(node=1), json={"db": {"password": "n0de-1-pw"}}).status_code
        == 204
    )
    assert with_password.get(NODE.format(node=1) + "?effective&reveal").status_code == 200

    def copy(snapshot):
        changes = ChangeSet("copy node 1's facts to node 2, ciphertext and all")
        for name in ("astute", "globals"):
            changes.put(f"nodes/2/values/{name}.yaml", snapshot.read(f"nodes/1/values/{name}.yaml"))
        return changes

    fuel_store.environment_repo(1).update(copy, fuel_store.default_author)
    answer = with_password.get(NODE.format(node=2) + "?effective&reveal")
    assert answer.status_code == 422 and "n0de-1-pw" not in answer.get_data(as_text=True)
    assert with_password.get(HIERA.format(node=2)).status_code == 422
