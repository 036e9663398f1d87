"""eyaml's PKCS7 values against the real hiera-eyaml CLI, and the store's eyaml key place."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
import yaml

from gitstore import Store
from gitstore.errors import Conflict
from gitstore.secrets import eyaml
from gitstore.secrets.eyamlpush import EyamlKeyPlace

KEYS = Path(__file__).resolve().parents[1] / "data" / "hiera-control" / "keys"
PUBLIC, PRIVATE = KEYS / "public_key.pkcs7.pem", KEYS / "private_key.pkcs7.pem"


def _pair() -> eyaml.EyamlKeys:
    return eyaml.EyamlKeys.load(PUBLIC.read_bytes(), PRIVATE.read_bytes())


def test_real_eyaml_values_decrypt_in_string_and_block_form():
    common = yaml.safe_load((KEYS.parent / "data" / "common.eyaml").read_text())
    assert "\n" not in common["profile::db::password_00"]
    assert eyaml.decrypt(common["profile::db::password_00"], _pair()) == "common secret 0 ünïcode"
    block = common["profile::app3::api_token_00"]
    assert " " in block.strip()  # folded: the base64 lines joined by spaces
    assert eyaml.decrypt(block, _pair()) == "block token 0"


def test_what_we_encrypt_the_real_eyaml_decrypts():
    value = eyaml.encrypt("for the eyaml CLI", _pair())
    done = subprocess.run(
        ["eyaml", "decrypt", "-s", value, "--pkcs7-private-key", str(PRIVATE)]
        + ["--pkcs7-public-key", str(PUBLIC)],
        capture_output=True,
        text=True,
        check=True,
    )
    assert done.stdout.strip() == "for the eyaml CLI"


@pytest.mark.parametrize("value", ["ENC[PKCS7,bm90IGNtcw==]", "ENC[PKCS7,!!]", "ENC[GPG,abc]"])
def test_values_that_do_not_decrypt_say_why(value):
    with pytest.raises(ValueError):
        eyaml.decrypt(value, _pair())


def test_the_key_place_keeps_one_pair_private(tmp_path):
    place = EyamlKeyPlace(tmp_path)
    assert place.keys() is None
    assert place.install(PUBLIC.read_bytes(), PRIVATE.read_bytes()) is True
    assert (tmp_path / "eyaml/private_key.pkcs7.pem").stat().st_mode & 0o777 == 0o600
    assert place.install(PUBLIC.read_bytes(), PRIVATE.read_bytes()) is False
    other = tmp_path / "other"
    other.mkdir()
    subprocess.run(["eyaml", "createkeys"], cwd=other, check=True, capture_output=True)
    with pytest.raises(Conflict, match="another eyaml key pair"):
        place.install(
            (other / "keys/public_key.pkcs7.pem").read_bytes(),
            (other / "keys/private_key.pkcs7.pem").read_bytes(),
        )


def test_sealing_without_eyaml_values_makes_no_commit(tmp_path):
    store = Store.init(tmp_path / "store")
    store.components.create({"name": "c", "resource_definitions": [{"name": "r"}]})
    store.environments.create({"id": 1, "components": ["c"]})
    store.eyaml_pushes.place.install(PUBLIC.read_bytes(), PRIVATE.read_bytes())
    head = store.environment_repo(1).head()
    assert store.eyaml_pushes.seal(1) is None
    assert store.environment_repo(1).head() == head
