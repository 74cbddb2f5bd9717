"""One record per GPU type and per NeMo-RL release, each fact with its source, and the tables derived from them.

A new GPU type or release is one record (core/catalog/gpus.py, core/catalog/nemo_rl.py): these tests fail when a
record leaves a fact without a source, or when a release's facts disagree with the release's own files kept in the
repository (its environment from uv.lock, its configs).
"""

from __future__ import annotations

import dataclasses
import re
from pathlib import Path

import pytest

from core import catalog
from core.catalog import gpus, nemo_rl

pytestmark = pytest.mark.unit

TESTS = Path(__file__).resolve().parent
NOT_FACTS = {"sources", "image_digest_source", "gpu_type", "family", "tag"}  # names and sources, not facts


def _undocumented(record) -> set[str]:
    covered = {f.strip() for key in record.sources for f in key.split(",")}
    facts = {f.name for f in dataclasses.fields(record)} - NOT_FACTS
    return facts - covered


@pytest.mark.parametrize(
    "record",
    list(catalog.ACCELERATORS.values()) + list(catalog.NEMO_RL_RELEASES.values()),
    ids=lambda r: getattr(r, "gpu_type", None) or r.tag,
)
def test_every_fact_of_a_record_names_its_source(record):
    assert not _undocumented(record), f"facts without a source: {sorted(_undocumented(record))}"
    assert all(s.strip() for s in record.sources.values())


@pytest.mark.parametrize("tag", sorted(catalog.NEMO_RL_RELEASES))
def test_a_releases_ray_is_the_ray_its_lock_installs(tag):
    text = (TESTS / "oracles" / "nemo_rl_environment" / f"{tag}.txt").read_text()
    assert re.search(rf"^ray=={re.escape(catalog.NEMO_RL_RELEASES[tag].ray_version)}$", text, re.M)
    assert catalog.NEMO_RL_RELEASES[tag].commit in text


@pytest.mark.parametrize("tag", sorted(catalog.NEMO_RL_RELEASES))
def test_a_releases_configs_are_kept_with_the_release(tag):
    for config in catalog.NEMO_RL_RELEASES[tag].configs:
        assert (TESTS.parent / "nemo-rl-reference" / tag / config).is_file(), config


def test_the_derived_tables_follow_the_records():
    recs = list(catalog.ACCELERATORS.values())
    assert catalog.LOCAL_SSD_COUNT == {a.machine_type: a.local_ssd_count for a in recs}
    assert catalog.FLEX_START_MACHINES == {a.machine_type for a in recs if a.flex_start}
    assert set(catalog.GATE_GPU_FACTS) == set(catalog.ACCELERATORS)
    assert catalog.FLAT_DATA_RELEASES == {t for t, r in catalog.NEMO_RL_RELEASES.items() if r.flat_data}
    assert set(catalog.NEMO_RL_IMAGE_PINS) == set(catalog.NEMO_RL_RELEASES)


def test_a_fact_without_a_source_is_caught():
    record = dataclasses.replace(gpus.ACCELERATORS["nvidia-b200"], sources={"machine_type": "somewhere"})
    assert "vcpus" in _undocumented(record)
    release = dataclasses.replace(nemo_rl.NEMO_RL_RELEASES["v0.5.0"], sources={})
    assert "ray_version" in _undocumented(release)
