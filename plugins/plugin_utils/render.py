"""The rendered kustomize tree: objects in, {relative path: file text} out (pure).

    <dir>/kustomization.yaml             the component folders, in apply order
    <dir>/<component>/kustomization.yaml  that component's files, in apply order
    <dir>/<component>/<kind>-<name>.yaml  one object per file

Components are the operators (nfd, sriov-network-operator, maintenance-operator,
network-operator, gpu-operator), the node groups' NicNodePolicies (nic-node-policies), the node
configuration (machine-config), the NIC firmware settings (nic-configuration) and the RDMA method
(shared-device, host-device, sriov-legacy). Every file starts with MARKER, so a later render
knows which files it may replace or remove.

Argo CD orders a sync by the `argocd.argoproj.io/sync-wave` annotation: each component's
kustomization.yaml puts it on its objects with kustomize's AnnotationsTransformer, by kind.
The object files themselves carry no Argo CD annotation, so they stay exactly the objects
site.yml applies. Waves (sync_wave): the operators' Namespaces, OperatorGroups and
Subscriptions first (0), then the operands in the order site.yml waits on them (NFD instance,
SriovOperatorConfig and MaintenanceOperatorConfig 1, NicClusterPolicy 2, NicNodePolicies and
MachineConfigs 3, NicConfigurationTemplates and ClusterPolicy 4), then the RDMA method (5), then
the monitoring step's rules, scrape and dashboard (6). An object whose CRD comes with an operator
also gets
`argocd.argoproj.io/sync-options: SkipDryRunOnMissingResource=true`: Argo CD's dry run of the
whole sync happens before that operator has installed its CRDs.
"""

from __future__ import annotations

from ansible_collections.gpudirect.rdma.plugins.module_utils.steps import (
    component_of,
    wave,
)
from ansible_collections.gpudirect.rdma.plugins.module_utils.yaml_text import to_yaml

MARKER = "# Rendered by gpudirect.rdma (playbooks/render.yml). Edit the inventory, not this file."

SYNC_WAVE = "argocd.argoproj.io/sync-wave"
SYNC_OPTIONS = "argocd.argoproj.io/sync-options"
SKIP_DRY_RUN = "SkipDryRunOnMissingResource=true"
WAVES_COMMENT = (
    "# Argo CD sync waves: operators 0, operands 1-4 (site.yml's order), the RDMA method 5,\n"
    "# monitoring 6.\n"
    "# The transformers add them at build time; the object files stay what site.yml applies."
)
# API groups OpenShift serves before any of the operators is installed: Kubernetes' core, OLM's,
# the Machine Config Operator's and the monitoring stack's (PrometheusRule, ServiceMonitor).
PLATFORM_GROUPS = (
    "",
    "operators.coreos.com",
    "machineconfiguration.openshift.io",
    "monitoring.coreos.com",
)


def file_name(obj: dict) -> str:
    return f"{obj['kind'].lower()}-{obj['metadata']['name']}.yaml"


def kustomize_tree(objects: list[dict]) -> dict[str, str]:
    files: dict[str, str] = {}
    components: dict[str, list[str]] = {}
    members: dict[str, list[dict]] = {}
    for obj in objects:
        component = component_of(obj)
        name = file_name(obj)
        namespace = obj["metadata"].get("namespace")
        if namespace and f"{component}/{name}" in files:
            name = f"{obj['kind'].lower()}-{namespace}-{obj['metadata']['name']}.yaml"
        path = f"{component}/{name}"
        if path in files:
            raise ValueError(f"two objects would be written to {path}")
        files[path] = f"{MARKER}\n{to_yaml(obj)}"
        components.setdefault(component, []).append(name)
        members.setdefault(component, []).append(obj)
    for component, names in components.items():
        files[f"{component}/kustomization.yaml"] = _kustomization(
            names, _argocd(members[component])
        )
    files["kustomization.yaml"] = _kustomization(list(components))
    return files


def sync_wave(obj: dict) -> int:
    """The Argo CD sync wave of an object: operators, then operands in the order of the steps
    (module_utils/steps/), then the RDMA method."""
    try:
        return wave(obj)
    except ValueError:
        component = component_of(obj)
        raise ValueError(
            f"{obj['kind']} {obj['metadata']['name']}: no sync wave for {component}"
        ) from None


def argocd_annotations(obj: dict) -> dict[str, str]:
    """The annotations Argo CD reads, as the component's kustomization.yaml adds them."""
    annotations = {SYNC_WAVE: str(sync_wave(obj))}
    if obj["apiVersion"].rpartition("/")[0] not in PLATFORM_GROUPS:
        annotations[SYNC_OPTIONS] = SKIP_DRY_RUN
    return annotations


def _argocd(objects: list[dict]) -> list[str]:
    """One AnnotationsTransformer per wave of the component, selecting its objects by kind
    (a component's objects of one kind share their wave)."""
    groups: dict[tuple, list[str]] = {}
    for obj in objects:
        kinds = groups.setdefault(tuple(argocd_annotations(obj).items()), [])
        if obj["kind"] not in kinds:
            kinds.append(obj["kind"])
    return [
        to_yaml(
            {
                "apiVersion": "builtin",
                "kind": "AnnotationsTransformer",
                "metadata": {"name": f"argocd-sync-wave-{dict(annotations)[SYNC_WAVE]}"},
                "annotations": dict(annotations),
                "fieldSpecs": [
                    {"kind": kind, "path": "metadata/annotations", "create": True} for kind in kinds
                ],
            }
        )
        for annotations, kinds in groups.items()
    ]


def _kustomization(resources: list[str], transformers: list[str] | None = None) -> str:
    kustomization = {
        "apiVersion": "kustomize.config.k8s.io/v1beta1",
        "kind": "Kustomization",
        "resources": resources,
    }
    if not transformers:
        return f"{MARKER}\n" + to_yaml(kustomization)
    kustomization["transformers"] = transformers
    return f"{MARKER}\n{WAVES_COMMENT}\n" + to_yaml(kustomization)
