"""docs/settings.md is generated from the settings' records (synth/settings_reference.py) and kept in step with them,
as Pulumi.yaml is: every key, with its type, default, description and the lines the program refuses it with."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from core.settings import SECRET_KEYS, config_fields
from synth import settings_reference

ROOT = Path(__file__).resolve().parents[1]


@pytest.mark.graph
def test_docs_settings_md_is_what_the_models_generate():
    assert (ROOT / "docs" / "settings.md").read_text() == settings_reference.render(), "run `make generated`"


@pytest.mark.unit
def test_every_setting_and_secret_has_its_entry_with_its_description_and_a_refusal():
    text = (ROOT / "docs" / "settings.md").read_text()
    entries = dict(re.findall(r"^### `([^`]+)`\n\n(.*)$", text, flags=re.MULTILINE))
    assert sorted(entries) == sorted(list(config_fields()) + list(SECRET_KEYS))
    for key, (_s, _f, info) in config_fields().items():
        assert entries[key] == info.description, key
        body = text.split(f"### `{key}`\n", 1)[1].split("\n### ", 1)[0]
        # Each documented bad value shows the line the program printed, naming the key; none was accepted.
        assert f"\n  nemo-rl-gke:{key}" in body and "(accepted)" not in body, key


@pytest.mark.unit
def test_every_table_of_contents_link_resolves_to_a_heading():
    text = (ROOT / "docs" / "settings.md").read_text()
    anchors = {
        re.sub(r"[^a-z0-9 -]", "", h.lower()).replace(" ", "-")
        for h in re.findall(r"^##+ (.+)$", text, flags=re.MULTILINE)
    }
    for link in re.findall(r"\]\(#([^)]+)\)", text):
        assert link in anchors, link
