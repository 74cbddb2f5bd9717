"""The replace-only table (core/catalog/replacements.py) against the pinned SDKs, and the plan's rules on small cases.

Oracles: the installed pulumi-gcp 10.2.0 and pulumi-kubernetes input classes (every path in the table must be an
input the program can set: a renamed or mistyped path fails), the bridge's autonaming rule as the SDK shows it (an
auto-named `name` is optional in the `*Args` class; pulumi-terraform-bridge `info/autonaming.go:43-63`), and the
providers' rules cited next to each case.
"""

from __future__ import annotations

import contextlib
import importlib
import re
import typing

import pytest

from core.catalog import replacements as rp
from synth import compare

pytestmark = pytest.mark.unit


def _args_class(type_token: str) -> type:
    """`gcp:container/nodePool:NodePool` -> pulumi_gcp.container.NodePoolArgs (same for kubernetes, providers)."""
    if type_token == "pulumi:providers:kubernetes":
        return importlib.import_module("pulumi_kubernetes").ProviderArgs
    if type_token.startswith("time:"):  # pulumiverse-time
        return getattr(importlib.import_module("pulumiverse_time"), f"{type_token.rsplit(':', 1)[1]}Args")
    pkg, module, cls = re.fullmatch(r"(\w+):([\w./]+):(\w+)", type_token).groups()  # type: ignore[union-attr]
    if pkg == "gcp":
        return getattr(importlib.import_module(f"pulumi_gcp.{module.split('/')[0]}"), f"{cls}Args")
    group, version = module.split("/") if "/" in module else ("core", module)
    mod = importlib.import_module(f"pulumi_kubernetes.{group.split('.')[0]}.{version}")
    return getattr(mod, f"{cls}Args")


def _inputs_of(cls: type) -> dict[str, typing.Any]:
    """Pulumi input name -> the property's annotation, from the SDK's `@pulumi.getter(name=...)` properties."""
    out = {}
    for klass in cls.__mro__:
        for attr in vars(klass).values():
            if isinstance(attr, property) and hasattr(attr.fget, "_pulumi_name"):
                out[attr.fget._pulumi_name] = attr.fget.__annotations__.get("return")
    return out


def _nested_args(annotation: typing.Any, module: typing.Any) -> typing.Optional[type]:
    names = re.findall(r"ForwardRef\('(\w+Args)'\)", repr(annotation)) or re.findall(r"\b(\w+Args)\b", repr(annotation))
    for name in names:
        for mod in (module, importlib.import_module(module.__name__.rsplit(".", 1)[0] + "._inputs")):
            if hasattr(mod, name):
                return getattr(mod, name)
    return None


def _path_exists(type_token: str, path: str) -> bool:
    cls: typing.Optional[type] = _args_class(type_token)
    if type_token.startswith("kubernetes:") and path.split(".")[0] in ("data", "stringData", "binaryData", "type"):
        return path.split(".")[0] in _inputs_of(cls)  # type: ignore[arg-type]
    for part in path.replace("[*]", "").split("."):
        if cls is None:
            return False
        inputs = _inputs_of(cls)
        if part not in inputs:
            return False
        cls = _nested_args(inputs[part], importlib.import_module(cls.__module__))
    return True


ALL_RULES = [(t, r) for t, rules in rp.REPLACE_ONLY.items() for r in rules] + [
    (f"kubernetes:{kind}", r) for kind, rules in rp.K8S_REPLACE_ONLY.items() for r in rules
]


@pytest.fixture(scope="module", autouse=True)
def _sdk_modules():
    """Every SDK module the rules name, imported once before the tests (pulumi_gcp.compute alone takes seconds)."""
    for type_token in sorted({t for t, _ in ALL_RULES} | set(rp.DELETE_FIRST)):
        with contextlib.suppress(Exception):  # a type the SDK lacks fails in its own test
            _args_class(type_token)


@pytest.mark.parametrize("type_token,rule", ALL_RULES, ids=lambda x: getattr(x, "path", x))
def test_every_replace_only_path_is_an_input_of_the_pinned_sdk(type_token, rule):
    if rule.path.startswith("metadata."):
        return  # every kind's metadata.name/namespace
    assert _path_exists(type_token, rule.path), f"{type_token}: {rule.path} is not an input"


@pytest.mark.parametrize("type_token,rule", ALL_RULES, ids=lambda x: getattr(x, "path", x))
def test_every_rule_cites_a_provider_file_and_line(type_token, rule):
    assert re.search(r"@(93c65b2d|v4\.32\.0|16bc819e) \S+\.go:\d+", rule.source), rule


def _optional(cls: type, param: str) -> bool:
    import inspect

    p = inspect.signature(cls.__init__).parameters.get(param)
    return p is not None and p.default is not inspect.Parameter.empty


@pytest.mark.parametrize("type_token", sorted(rp.DELETE_FIRST))
def test_delete_first_types_are_auto_named_in_the_sdk_or_forced_by_pulumi_gcp(type_token):
    # The bridge auto-names an input `name` (or pulumi-gcp's explicit AutoName field); auto-named inputs are
    # optional in the SDK. Set by the program, their replacement is delete-first (bridge schema.go:195-246).
    cls = _args_class(type_token)
    if "DeleteBeforeReplace" in rp.DELETE_FIRST[type_token]:
        return  # projects IAMMember: pulumi-gcp resources.go:934-939
    field = "account_id" if "accountId" in rp.DELETE_FIRST[type_token] else "name"
    assert _optional(cls, field), f"{type_token}.{field} is required: not auto-named, so not delete-first"


def test_the_lustre_instance_id_is_required_so_a_create_first_replacement_would_collide():
    import pulumi_gcp as gcp

    assert not _optional(gcp.lustre.InstanceArgs, "instance_id")
    assert "gcp:lustre/instance:Instance" in rp.FIXED_ID and "gcp:lustre/instance:Instance" not in rp.DELETE_FIRST


def test_a_subnet_range_replaces_unless_the_new_one_contains_the_old():
    # customdiff.ForceNewIfChange("ip_cidr_range", IsShrinkageIpCidr) (compute/resource_compute_subnetwork.go:512)
    t = "gcp:compute/subnetwork:Subnetwork"
    assert rp.triggered(t, "ipCidrRange", {}, {}, "10.0.0.0/20", "10.0.0.0/19") is None
    assert rp.triggered(t, "ipCidrRange", {}, {}, "10.0.0.0/20", "10.0.0.0/21") is not None
    assert rp.triggered(t, "ipCidrRange", {}, {}, "10.0.0.0/20", "10.1.0.0/20") is not None


def test_a_force_new_block_replaces_only_when_it_appears_or_disappears():
    # pulumi-terraform-bridge cross-test TestBlockCollectionForceNew; node pool placement_policy (NP:381-386).
    t = "gcp:container/nodePool:NodePool"
    with_policy = {"placementPolicy": {"type": "COMPACT"}}
    assert rp.triggered(t, "placementPolicy.type", {}, with_policy, compare.ABSENT, "COMPACT") is not None
    assert rp.triggered(t, "placementPolicy.type", with_policy, {"placementPolicy": {"type": "X"}}) is None
    # machineType updates in place, but GKE migrates the nodes (recreates-nodes, not replace).
    rule = rp.triggered(t, "nodeConfig.machineType", {"nodeConfig": {}}, {"nodeConfig": {}}, "a", "b")
    assert rule is not None and rule.kind == "recreates-nodes"


def test_adding_a_cluster_identifier_replaces_nothing_changing_it_replaces_the_provider():
    # pulumi-kubernetes provider.go:484-502: replace on Updated, not on added/removed.
    t = "pulumi:providers:kubernetes"
    assert rp.triggered(t, "clusterIdentifier", {}, {}, compare.ABSENT, "projects/p/locations/l/clusters/c") is None
    assert rp.triggered(t, "clusterIdentifier", {}, {}, "a", "b") is not None


def test_a_skip_await_job_replacement_meets_itself_unless_deleted_in_the_background():
    # pulumi-kubernetes overrides.go:168-209 (skipAwait Job deletes are not awaited), :68-79 (Foreground default).
    job = "kubernetes:batch/v1:Job"
    skip = {"metadata": {"annotations": {"pulumi.com/skipAwait": "true"}}}
    assert rp.unawaited_delete(job, skip)
    background = {
        "metadata": {
            "annotations": {**skip["metadata"]["annotations"], rp.DELETION_PROPAGATION_ANNOTATION: "background"}
        }
    }
    assert rp.unawaited_delete(job, background) == ""
    assert rp.unawaited_delete(job, {"metadata": {}}) == ""  # awaited: the create follows the delete
    assert rp.unawaited_delete("kubernetes:ray.io/v1:RayCluster", skip) == ""  # CRs are awaited


# --- the providers' rules beyond schema ForceNew, read from their own source (tests/oracles/, SOURCES.md there) --
ORACLES = __import__("pathlib").Path(__file__).parent / "oracles"
CLUSTER = "gcp:container/cluster:Cluster"


def oracle(name: str) -> str:
    return (ORACLES / name).read_text()


def test_turning_fqdn_policies_off_replaces_the_cluster_by_the_providers_customize_diff():
    # The schema field is no ForceNew (Default false) ...
    schema = oracle("google-beta/enable_fqdn_network_policy.schema.go.txt")
    assert '"enable_fqdn_network_policy"' in schema and "ForceNew" not in schema and "Default:     false" in schema
    # ... but CustomizeDiff forces a new cluster when isBeenEnabled(old, new): old true, new false.
    assert 'customdiff.ForceNewIfChange("enable_fqdn_network_policy", isBeenEnabled)' in oracle(
        "google-beta/ResourceContainerCluster.CustomizeDiff.go.txt"
    )
    body = oracle("google-beta/isBeenEnabled.go.txt")
    assert "if old.(bool) && !new.(bool) {\n\t\treturn true" in body
    rule = next(r for r in rp.REPLACE_ONLY[CLUSTER] if r.path == "enableFqdnNetworkPolicy")
    assert rule.kind == "replace-when-disabled"
    assert rp.triggered(CLUSTER, "enableFqdnNetworkPolicy", {}, {}, True, False) == rule
    assert rp.triggered(CLUSTER, "enableFqdnNetworkPolicy", {}, {}, True, compare.ABSENT) == rule  # Default false
    assert rp.triggered(CLUSTER, "enableFqdnNetworkPolicy", {}, {}, False, True) is None  # enabling updates


def test_a_cluster_with_deletion_protection_is_refused_its_delete_before_any_api_call():
    delete = oracle("google-beta/resourceContainerClusterDelete.go.txt")
    refusal = delete.index('if d.Get("deletion_protection").(bool) {')
    assert refusal < delete.index("Clusters.Delete(name)") and "Cannot destroy cluster" in delete[refusal:]
    assert rp.delete_refusal(CLUSTER, {"deletionProtection": True})
    assert rp.delete_refusal(CLUSTER, {"deletionProtection": False}) == ""


def test_a_changed_secondary_range_is_an_update_that_patches_the_old_range_away_first():
    schema = oracle("google-beta/secondary_ip_range.schema.go.txt")
    assert '"secondary_ip_range"' in schema and "ForceNew" not in schema  # an update, never a replacement
    update = oracle("google-beta/resourceComputeSubnetworkUpdate.secondary_ip_range.go.txt")
    removal = update.index('removalObj["secondaryIpRanges"] = rangesAfterRemoval')
    assert update.index("removalsRaw := oldRanges.Difference(newRanges)") < removal
    assert 'Method:    "PATCH"' in update[removal:]
    t = "gcp:compute/subnetwork:Subnetwork"
    assert not any(r.path.startswith("secondaryIpRanges") for r in rp.REPLACE_ONLY[t])
    assert rp.api_refusal(t, "secondaryIpRanges[0].ipCidrRange", "10.4.0.0/14") is not None
    assert rp.api_refusal(t, "secondaryIpRanges[2].ipCidrRange", compare.ABSENT) is None  # a new range is fine


def test_a_folder_holding_objects_is_not_deleted_and_a_managed_folder_keeps_its_objects():
    folder = oracle("google-beta/resourceStorageFolderDelete.go.txt")
    assert 'if !d.Get("force_destroy").(bool) {' in folder and "containing objects without force_destroy" in folder
    assert rp.delete_refusal("gcp:storage/folder:Folder", {"forceDestroy": False})
    managed = oracle("magic-modules/ManagedFolder.yaml.txt")
    assert "delete_url: b/{{bucket}}/managedFolders/{{%name}}?allowNonEmpty={{force_destroy}}" in managed
    assert "any objects\n      within the folder will remain" in managed
    mf = "gcp:storage/managedFolder:ManagedFolder"
    assert "deletes data" not in rp.CONSEQUENCES.get(mf, ())  # wrong in every case: the objects stay
    assert rp.delete_refusal(mf, {"forceDestroy": True}) == "" and rp.delete_refusal(mf, {"forceDestroy": False})


def test_a_resource_policy_name_is_mutable_and_patched_at_the_new_name():
    yaml_text = oracle("magic-modules/ResourcePolicy.yaml.txt")
    assert "update_url: 'projects/{{project}}/regions/{{region}}/resourcePolicies/{{name}}'" in yaml_text
    assert "update_verb: 'PATCH'" in yaml_text
    name = yaml_text[yaml_text.index("  - name: 'name'") : yaml_text.index("  - name: 'description'")]
    assert "required: true" in name and "immutable" not in name
    t = "gcp:compute/resourcePolicy:ResourcePolicy"
    assert not any(r.path == "name" for r in rp.REPLACE_ONLY[t])
    assert rp.api_refusal(t, "name", "nemo-dev-gpu-flex-placement") is not None


def test_every_type_with_a_name_input_replaces_on_it_or_says_the_api_refuses_its_update():
    # The #27818 pattern (a mutable `name`, updated at the new name) may not hide in a type the table lists.
    for t in rp.REPLACE_ONLY:
        if not t.startswith("gcp:") or "name" not in _inputs_of(_args_class(t)):
            continue
        replaces = any(r.path == "name" and r.kind == "replace" for r in rp.REPLACE_ONLY[t])
        refused = any(r.path == "name" for r in rp.API_REFUSES.get(t, ()))
        assert replaces or refused, t


def test_configmap_keys_follow_the_apis_rule():
    src = oracle("kubernetes/IsConfigMapKey.go.txt")
    max_len = int(re.search(r"const DNS1123SubdomainMaxLength int = (\d+)", src).group(1))  # type: ignore[union-attr]
    fmt = re.search(r"const configMapKeyFmt = `([^`]+)`", src).group(1)  # type: ignore[union-attr]
    assert "if len(value) > DNS1123SubdomainMaxLength" in src
    from core import catalog

    assert (catalog.K8S_CONFIGMAP_KEY_MAX, catalog.K8S_CONFIGMAP_KEY_RE) == (max_len, fmt)


def test_the_warmup_hold_bound_is_what_an_int64_field_takes_through_pulumi():
    import json
    from pathlib import Path

    import kubernetes_validate

    from core import catalog
    from core.settings.startup import StartupSettings

    schemas = Path(kubernetes_validate.__file__).parent / "kubernetes-json-schema" / "v1.33.0-local-strict"
    field = json.loads((schemas / "jobspec-batch-v1.json").read_text())["properties"]["activeDeadlineSeconds"]
    assert field["format"] == "int64"
    bound = next(m.le for m in StartupSettings.model_fields["warmup_hold_seconds"].metadata if hasattr(m, "le"))
    assert bound == catalog.PULUMI_EXACT_INT_MAX <= 2**63 - 1
    # A protobuf Struct number is a double: the bound is carried exactly, the next integers are not.
    assert int(float(bound)) == bound and float(2**53 + 1) != 2**53 + 1


def test_without_a_cluster_identifier_a_changed_kubeconfig_cluster_replaces_the_provider():
    # pulumi-kubernetes DiffConfig (provider.go:486-502, :553 at v4.32.0).
    t = "pulumi:providers:kubernetes"

    def snap(cluster: str, ident: str = "") -> compare.Snapshot:
        inputs = {"kubeconfig": "[secret]", **({"clusterIdentifier": ident} if ident else {})}
        rec = {"type": t, "name": "k8s", "custom": True, "inputs": inputs, "kubeconfigCluster": cluster}
        return compare.snapshot([rec], [])

    name = f"{t} k8s"
    assert compare.plan(snap("a"), snap("b"))[name].replaced
    assert name not in compare.plan(
        snap("a", "projects/p/locations/l/clusters/c"), snap("b", "projects/p/locations/l/clusters/c")
    )
    assert compare.plan(snap("a", "x"), snap("a", "y"))[name].replaced  # the identifier itself changed
