"""The rendered kustomize tree: objects in, {relative path: file text} out (pure).

    <dir>/kustomization.yaml             the component folders, in apply order
    <dir>/<component>/kustomization.yaml  that component's files, in apply order
    <dir>/<component>/<kind>-<name>.yaml  one object per file

Components are the operators (nfd, sriov-network-operator, network-operator, gpu-operator),
the node configuration (machine-config) and the RDMA method (shared-device, host-device,
sriov-legacy). Every file starts with MARKER, so a later render knows which files it may
replace or remove.
"""

from __future__ import annotations

import yaml

from ansible_collections.gpudirect.rdma.plugins.plugin_utils.builders import component_of

MARKER = "# Rendered by gpudirect.rdma (playbooks/render.yml). Edit the inventory, not this file."


class _Dumper(yaml.SafeDumper):
    """Block style, keys in the order the builders wrote them, list items indented under
    their key (as yamllint and kubectl write them), multi-line strings as `|`."""

    def increase_indent(self, flow=False, indentless=False):
        return super().increase_indent(flow, False)


def _string(dumper: yaml.SafeDumper, value: str):
    style = "|" if "\n" in value and not value.startswith((" ", "\t")) else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_Dumper.add_representer(str, _string)


def to_yaml(document) -> str:
    return yaml.dump(
        document,
        Dumper=_Dumper,
        sort_keys=False,
        default_flow_style=False,
        width=1000,
        allow_unicode=True,
    )


def file_name(obj: dict) -> str:
    return f"{obj['kind'].lower()}-{obj['metadata']['name']}.yaml"


def kustomize_tree(objects: list[dict]) -> dict[str, str]:
    files: dict[str, str] = {}
    components: dict[str, list[str]] = {}
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
    for component, names in components.items():
        files[f"{component}/kustomization.yaml"] = _kustomization(names)
    files["kustomization.yaml"] = _kustomization(list(components))
    return files


def _kustomization(resources: list[str]) -> str:
    return f"{MARKER}\n" + to_yaml(
        {
            "apiVersion": "kustomize.config.k8s.io/v1beta1",
            "kind": "Kustomization",
            "resources": resources,
        }
    )
