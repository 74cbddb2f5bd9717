"""JobScripts: the programs the pods run (pod_programs/), as the `nemo-rl-scripts` ConfigMap.

The RayJob entrypoint runs files instead of inlining them: the Ray head mounts the ConfigMap read-only at
`recipes.SCRIPTS_DIR` (workloads/manifests/raycluster.py), where the job's driver runs, and the weights prefetch
Job mounts it too. What it ships is `pod_programs.SHIPPED`. Its name is the static `core.naming.JOB_SCRIPTS`
because the pod specs refer to it by name, and the RayCluster and the RayJob depend on it: a head pod whose
ConfigMap volume is missing would not start. The programs are the same for every stack (paths reach them
through argv and the environment); a stack with jobConfigFiles adds those files. It holds no secret; the policy
pack scans ConfigMap data for credentials all the same.
"""

from __future__ import annotations

from typing import Optional

import pulumi
import pulumi_kubernetes as k8s

import pod_programs
from core import recipes
from core.naming import JOB_SCRIPTS


def job_scripts() -> dict[str, str]:
    """File name -> content of the files under SCRIPTS_DIR, in `pod_programs.SHIPPED` order. The same for every
    stack: what differs (the output directory, HF_HOME) reaches the programs through argv and the environment."""
    return {f.name: (pod_programs.DIR / f.name).read_text(encoding="utf-8") for f in pod_programs.SHIPPED}


class JobScripts(pulumi.ComponentResource):
    config_map: k8s.core.v1.ConfigMap

    def __init__(
        self,
        name: str,
        namespace: pulumi.Input[str],
        provider: k8s.Provider,
        user_files: Optional[dict[str, str]] = None,
        opts: Optional[pulumi.ResourceOptions] = None,
    ):
        super().__init__("nemo-rl-gke:workloads:JobScripts", name, None, opts)
        # The user's own config files (jobConfigFiles), content-addressed keys (core.recipes.user_config_files):
        # only a stack that sets some ships more than the programs.
        files = {**job_scripts(), **(user_files or {})}
        self.config_map = k8s.core.v1.ConfigMap(
            "job-scripts",
            metadata=k8s.meta.v1.ObjectMetaArgs(
                name=JOB_SCRIPTS,
                namespace=namespace,
                labels={"app.kubernetes.io/part-of": "nemo-rl-gke"},
                annotations={"nemo-rl-gke/mount-path": recipes.SCRIPTS_DIR},
            ),
            data=files,
            opts=pulumi.ResourceOptions(parent=self, provider=provider),
        )
        self.register_outputs({"name": self.config_map.metadata.name, "files": sorted(files)})


class JobConfigs(pulumi.ComponentResource):
    """An experiment stack's own config files (jobConfigFiles) as a ConfigMap of its own, in its namespace, that only
    its RayJob's head mounts (at recipes.IMAGE_PATHS.configs_dir, workloads/manifests/raycluster.py): the files of one
    experiment reach no other job, and the platform's job-scripts ConfigMap stays the platform's. Keys are the files'
    content-addressed names (core.recipes.user_config_files), which the settings hold to the API's ConfigMap key
    rules (core.catalog.K8S_CONFIGMAP_KEY_MAX / K8S_CONFIGMAP_KEY_RE)."""

    config_map: k8s.core.v1.ConfigMap

    def __init__(
        self,
        name: str,
        config_map_name: str,
        namespace: pulumi.Input[str],
        files: dict[str, str],
        provider: k8s.Provider,
        opts: Optional[pulumi.ResourceOptions] = None,
    ):
        super().__init__("nemo-rl-gke:workloads:JobConfigs", name, None, opts)
        self.config_map = k8s.core.v1.ConfigMap(
            "job-configs",
            metadata=k8s.meta.v1.ObjectMetaArgs(
                name=config_map_name,
                namespace=namespace,
                labels={"app.kubernetes.io/part-of": "nemo-rl-gke"},
                annotations={"nemo-rl-gke/mount-path": recipes.IMAGE_PATHS.configs_dir},
            ),
            data=dict(files),
            opts=pulumi.ResourceOptions(parent=self, provider=provider),
        )
        self.register_outputs({"name": self.config_map.metadata.name, "files": sorted(files)})
