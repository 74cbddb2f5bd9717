"""The job's helper programs as a ConfigMap, so the RayJob entrypoint runs files instead of inlining them.

`job_scripts()` decides the files (`prepare_gsm8k.py`, the readiness gate `readiness_gate.py` with its
decision module `gate_checks.py`, which it imports from the same directory, the weights prefetch, the checkpoint
export and the check for an interrupted Megatron weight conversion `megatron_import_guard.py`); the Ray head mounts the ConfigMap
read-only at `recipes.SCRIPTS_DIR` (workloads/raycluster_spec.py), where the job's driver runs. Its name is the
static `core.naming.JOB_SCRIPTS` because the pod spec refers to it by name, and the RayCluster and the RayJob
depend on it: a head pod whose ConfigMap volume is missing would not start. The content is the same for every
stack (paths reach the programs through argv and the environment) and holds no secret; the policy pack scans
ConfigMap data for credentials all the same.
"""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import pulumi
import pulumi_kubernetes as k8s

from core import export, prefetch, recipes
from core.naming import JOB_SCRIPTS


def job_scripts() -> dict[str, str]:
    """File name -> content of the files under SCRIPTS_DIR. The same for every stack: what differs (the
    output directory, HF_HOME) reaches the programs through argv and the environment."""
    names = (recipes.GSM8K_SCRIPT, recipes.GATE_SCRIPT, recipes.GATE_MODULE, prefetch.SCRIPT, prefetch.REQUIREMENTS,
             export.SCRIPT, recipes.MEGATRON_GUARD_SCRIPT)
    return {n: Path(__file__).with_name(n).read_text(encoding="utf-8") for n in names}


class JobScripts(pulumi.ComponentResource):
    config_map: k8s.core.v1.ConfigMap

    def __init__(self, name: str, namespace: pulumi.Input[str], provider: k8s.Provider,
                 opts: Optional[pulumi.ResourceOptions] = None):
        super().__init__("nemo-rl-gke:workloads:JobScripts", name, None, opts)
        files = job_scripts()
        self.config_map = k8s.core.v1.ConfigMap(
            "job-scripts",
            metadata=k8s.meta.v1.ObjectMetaArgs(
                name=JOB_SCRIPTS, namespace=namespace,
                labels={"app.kubernetes.io/part-of": "nemo-rl-gke"},
                annotations={"nemo-rl-gke/mount-path": recipes.SCRIPTS_DIR}),
            data=files,
            opts=pulumi.ResourceOptions(parent=self, provider=provider))
        self.register_outputs({"name": self.config_map.metadata.name, "files": sorted(files)})
