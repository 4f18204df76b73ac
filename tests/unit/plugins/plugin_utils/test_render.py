"""The rendered tree's Argo CD sync waves: each component's kustomization.yaml annotates every
object of the folder exactly once (by kind), the object files carry no Argo CD annotation, and
the operators' files are the ones docs/gitops.md's kubectl sequence applies first.
`tests/integration/test_render.py` builds the same trees with `kubectl kustomize`."""

from __future__ import annotations

import pytest
import yaml

from ansible_collections.gpudirect.rdma.plugins.module_utils import yaml_text
from ansible_collections.gpudirect.rdma.plugins.module_utils.steps import build_objects
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.plan import build_plan
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.render import (
    MARKER,
    SKIP_DRY_RUN,
    SYNC_OPTIONS,
    SYNC_WAVE,
    argocd_annotations,
    kustomize_tree,
    sync_wave,
)
from tests.unit.inventories import NAMES, inputs

# The files docs/gitops.md applies first without Argo CD (the operators), by name.
OPERATOR_FILE_PREFIXES = ("namespace-", "operatorgroup-", "subscription-")


def annotated(files: dict[str, str]) -> dict[str, dict]:
    """What each component's transformers add, by file path: a small AnnotationsTransformer
    applied the way kustomize applies it (fieldSpecs by kind, within the folder)."""
    result = {}
    for path, text in files.items():
        if not path.endswith("/kustomization.yaml"):
            continue
        folder = path.rpartition("/")[0]
        kustomization = yaml.safe_load(text)
        transformers = [yaml.safe_load(t) for t in kustomization.get("transformers", [])]
        for name in kustomization["resources"]:
            obj = yaml.safe_load(files[f"{folder}/{name}"])
            added: dict = {}
            for transformer in transformers:
                assert transformer["kind"] == "AnnotationsTransformer"
                for spec in transformer["fieldSpecs"]:
                    assert spec == {
                        "kind": spec["kind"],
                        "path": "metadata/annotations",
                        "create": True,
                    }
                    if spec["kind"] == obj["kind"]:
                        assert not added, f"{folder}/{name}: selected by two transformers"
                        added = transformer["annotations"]
            result[f"{folder}/{name}"] = added
    return result


@pytest.mark.parametrize("inventory", NAMES)
def test_every_object_gets_its_wave_from_its_folders_kustomization(inventory):
    objects = build_objects(build_plan(inputs(inventory)))
    files = kustomize_tree(objects)
    added = annotated(files)
    assert len(added) == len(objects)
    for path, argocd in added.items():
        obj = yaml.safe_load(files[path])
        assert argocd == argocd_annotations(obj), path
        assert "argocd.argoproj.io/" not in files[path], f"{path}: the object file stays as applied"
        operator_file = path.rpartition("/")[2].startswith(OPERATOR_FILE_PREFIXES)
        assert operator_file == (argocd[SYNC_WAVE] == "0"), path


@pytest.mark.parametrize("inventory", NAMES)
def test_kustomizations_start_with_the_marker_and_the_top_one_has_no_transformers(inventory):
    files = kustomize_tree(build_objects(build_plan(inputs(inventory))))
    for path, text in files.items():
        assert text.startswith(MARKER + "\n"), path
    assert "transformers" not in yaml.safe_load(files["kustomization.yaml"])


def test_waves_and_dry_run_options_by_kind():
    objects = build_objects(build_plan(inputs("sriov-legacy-infiniband")))
    waves = {obj["kind"]: argocd_annotations(obj) for obj in objects}
    assert waves["Subscription"] == {SYNC_WAVE: "0"}
    assert waves["NodeFeatureDiscovery"] == {SYNC_WAVE: "1", SYNC_OPTIONS: SKIP_DRY_RUN}
    assert waves["SriovOperatorConfig"] == {SYNC_WAVE: "1", SYNC_OPTIONS: SKIP_DRY_RUN}
    assert waves["NicClusterPolicy"] == {SYNC_WAVE: "2", SYNC_OPTIONS: SKIP_DRY_RUN}
    assert waves["MachineConfig"] == {SYNC_WAVE: "3"}
    assert waves["ClusterPolicy"] == {SYNC_WAVE: "4", SYNC_OPTIONS: SKIP_DRY_RUN}
    assert waves["SriovNetworkNodePolicy"] == {SYNC_WAVE: "5", SYNC_OPTIONS: SKIP_DRY_RUN}
    assert waves["SriovIBNetwork"] == {SYNC_WAVE: "5", SYNC_OPTIONS: SKIP_DRY_RUN}


def test_an_object_of_no_rendered_component_has_no_wave():
    pod = {
        "kind": "Pod",
        "metadata": {"name": "rdma-test", "labels": {"gpudirect.rdma/component": "verify"}},
    }
    with pytest.raises(ValueError, match="Pod rdma-test: no sync wave for verify"):
        sync_wave(pod)


class _Reference(yaml.SafeDumper):
    """The renderer's dumper without its shortcut for long plain strings."""

    def increase_indent(self, flow=False, indentless=False):
        return super().increase_indent(flow, False)


_Reference.add_representer(str, yaml_text._string)

LONG = "data:text/plain;base64," + "U1VCU1lTVEVNPT0ibmV0Iix+/=" * 200


@pytest.mark.parametrize(
    "document",
    [
        {"spec": {"source": LONG, "mode": 420}},
        {"files": [{"contents": {"source": LONG}}, LONG]},
        [LONG, LONG.replace(",", ".")],
        {"flow": LONG, "no_comma": LONG.replace(",", "").replace(":", "")},
        # Not taken by the shortcut: a space, a trailing ":", a leading "-", a "#".
        {"a": LONG + " tail", "b": LONG + ":", "c": "-" + LONG, "d": LONG + "#x"},
        {"short": "data:x,y", LONG[:300]: "a long key"},
    ],
)
def test_long_plain_strings_are_written_as_pyyaml_writes_them(document):
    reference = yaml.dump(
        document, Dumper=_Reference, sort_keys=False, default_flow_style=False, width=1000
    )
    assert yaml_text.to_yaml(document) == reference
    assert yaml.safe_load(yaml_text.to_yaml(document)) == document


def test_a_tree_of_8000_persistent_nic_names_is_written_as_pyyaml_writes_it():
    names = [
        {"mac": f"b8:3f:d2:{n >> 8 & 0xFF:02x}:{n & 0xFF:02x}:{r:02x}", "name": f"ens{r + 1}f0np0"}
        for n in range(1000)
        for r in range(8)
    ]
    plan = build_plan({**inputs("shared-device-roce"), "persistent_nic_names": names})
    objects = build_objects(plan)
    files = kustomize_tree(objects)
    machine_config = next(text for path, text in files.items() if "udev" in path)
    assert len(machine_config) > 1_000_000
    body = machine_config.split("\n", 1)[1]
    obj = next(o for o in objects if "udev" in o["metadata"]["name"])
    assert body == yaml.dump(
        obj,
        Dumper=_Reference,
        sort_keys=False,
        default_flow_style=False,
        width=1000,
        allow_unicode=True,
    )
