"""The pure steps of carrying settings into a newer release (gitstore.merge.migrations)."""

from __future__ import annotations

import pytest

from gitstore.errors import InvalidInput
from gitstore.merge import migrations as m


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("newton-10.0", (10, 0)),
        ("2015.1.0-7.0", (7, 0)),
        ("9.0", (9, 0)),
        ("10", (10,)),
        (9.0, (9, 0)),
    ],
)
def test_release_versions_compare_by_their_fuel_part(text, expected):
    assert m.parse_version(text) == expected


@pytest.mark.parametrize("text", ["newton", "", None, "9.x", True])
def test_a_version_that_is_not_one_is_named(text):
    with pytest.raises(InvalidInput, match="release version"):
        m.parse_version(text, "since")


def test_rules_apply_for_every_version_after_the_original_up_to_the_target():
    rules = [
        {"since": "11.0", "op": "delete", "path": "editable.a.x"},
        {"since": "9.0", "op": "delete", "path": "editable.a.y"},
        {"since": "10.0", "op": "delete", "path": "editable.a.z"},
        {"since": "8.0", "op": "delete", "path": "editable.a.w"},
    ]
    chosen = m.applicable(rules, m.parse_version("mitaka-9.0"), m.parse_version("newton-11.0"))
    assert [r["since"] for r in chosen] == ["10.0", "11.0"]


def test_each_operation_changes_the_named_path_only():
    settings = {
        "editable": {
            "dns": {"list": {"type": "text", "value": "1.1.1.1, 8.8.8.8,"}},
            "old": {"key": {"value": 3}},
            "gone": {"x": 1},
        },
        "generated": {"nova": {"pass": "p"}},
    }
    rules = [
        {"since": "1", "op": "text_to_list", "path": "editable.dns.list"},
        {"since": "1", "op": "rename", "path": "editable.old.key", "to": "editable.new.key"},
        {"since": "1", "op": "delete", "path": "editable.gone"},
        {"since": "1", "op": "set", "path": "generated.nova.extra", "value": {"a": 1}},
        {"since": "1", "op": "delete", "path": "editable.absent.key"},
    ]
    result = m.apply_rules(settings, rules)
    assert result == {
        "editable": {
            "dns": {"list": {"type": "text_list", "value": ["1.1.1.1", "8.8.8.8"]}},
            "old": {},
            "new": {"key": {"value": 3}},
        },
        "generated": {"nova": {"pass": "p", "extra": {"a": 1}}},
    }
    assert settings["editable"]["dns"]["list"]["value"] == "1.1.1.1, 8.8.8.8,"  # a copy


def test_a_plain_text_setting_becomes_a_list():
    assert m.apply_rules(
        {"editable": {"s": {"ntp": "a, b"}}},
        [{"since": "1", "op": "text_to_list", "path": "editable.s.ntp"}],
    ) == {"editable": {"s": {"ntp": ["a", "b"]}}}


@pytest.mark.parametrize(
    ("rules", "word"),
    [
        ({"rules": [{"since": "9.0", "op": "explode", "path": "editable.a.b"}]}, "op"),
        ({"rules": [{"since": "nine", "op": "delete", "path": "editable.a.b"}]}, "since"),
        ({"rules": [{"since": "9.0", "op": "delete", "path": "other.a.b"}]}, "path"),
        ({"rules": [{"since": "9.0", "op": "set", "path": "editable.a.b"}]}, "value"),
        ({"rules": [{"since": "9.0", "op": "rename", "path": "editable.a.b"}]}, "to"),
        ({"rules": [{"since": "9.0", "op": "delete", "path": "editable.a", "extra": 1}]}, "extra"),
        ({"rules": "nope"}, "list"),
        ({"other": []}, "rules"),
    ],
)
def test_malformed_rules_are_refused_naming_the_part(rules, word):
    with pytest.raises(InvalidInput, match=word):
        m.check_rules(rules)


def test_editable_values_are_carried_for_keys_both_sides_have():
    defaults = {
        "common": {
            "metadata": {"label": "Common", "weight": 10},
            "debug": {"type": "checkbox", "value": False, "label": "Debug"},
            "new_key": {"type": "text", "value": "default"},
        },
        "repo_setup": {"repos": {"value": ["new"]}},
        "new_section": {"k": {"value": 1}},
    }
    original = {
        "common": {
            "metadata": {"label": "Changed", "weight": 99},
            "debug": {"type": "checkbox", "value": True, "label": "Old label"},
            "old_key": {"value": "dropped"},
        },
        "repo_setup": {"repos": {"value": ["old"]}},
        "old_section": {"k": {"value": 2}},
    }
    merged = m.merge_editable(defaults, original)
    assert merged == {
        "common": {
            "metadata": {"label": "Common", "weight": 10},
            "debug": {"type": "checkbox", "value": True, "label": "Debug"},
            "new_key": {"type": "text", "value": "default"},
        },
        "repo_setup": {"repos": {"value": ["new"]}},
        "new_section": {"k": {"value": 1}},
    }


def test_generated_settings_merge_deeply_with_the_original_winning():
    defaults = {"nova": {"db_password": "new", "user_password": "new"}, "aodh": {"p": "new"}}
    original = {"nova": {"db_password": "old"}, "legacy": {"p": "old"}}
    assert m.merge_generated(defaults, original) == {
        "nova": {"db_password": "old", "user_password": "new"},
        "aodh": {"p": "new"},
        "legacy": {"p": "old"},
    }
