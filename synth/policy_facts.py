"""policy/catalog_facts.json: the catalog facts the policy pack checks against, derived from the catalog records.

The pack is self-contained (it can be published to Pulumi Cloud without the project), so it reads this file instead
of importing core. `python -m synth.policy_facts` rewrites it after a GPU type or a NeMo-RL release is added to the
catalog; tests/test_policy.py fails while the file and the catalog disagree.
"""

from __future__ import annotations

import json
from pathlib import Path

from core import catalog, naming
from workloads.manifests.pod_security import TOKEN_VALUE_VARIABLES

PATH = Path(__file__).resolve().parents[1] / "policy" / "catalog_facts.json"


def facts() -> dict:
    return {
        "_generated": "by `python -m synth.policy_facts` from core/catalog and workloads/manifests/pod_security.py; "
        "do not edit",
        "nemo_rl_image_repo": catalog.NEMO_RL_IMAGE_REPO,
        # NeMo-RL image tag -> the Ray inside it (= the RayCluster's rayVersion).
        "nemo_rl_ray_versions": {t: r.ray_version for t, r in catalog.NEMO_RL_RELEASES.items()},
        # Node label value (cloud.google.com/gke-accelerator) -> gIB tuner config of that GPU type.
        "tuner_configs": {g: a.tuner_config for g, a in catalog.ACCELERATORS.items()},
        "rdma_nics_per_node": catalog.RDMA_NICS_PER_NODE,
        # Variables that carry a token's value, and the Secrets holding the tokens: tokens reach pods only as files.
        "token_value_variables": list(TOKEN_VALUE_VARIABLES),
        "token_secrets": [naming.HF_SECRET, naming.RAY_AUTH_SECRET],
        # Ray ports that run code for whoever reaches them, by KubeRay's port names.
        "ray_exposed_ports": {
            catalog.RAY_DASHBOARD_PORT_NAME: catalog.RAY_DASHBOARD_PORT,
            catalog.RAY_CLIENT_PORT_NAME: catalog.RAY_CLIENT_PORT,
        },
    }


def render() -> str:
    return json.dumps(facts(), indent=2) + "\n"


if __name__ == "__main__":
    PATH.write_text(render(), encoding="utf-8")
    print(f"wrote {PATH}")
