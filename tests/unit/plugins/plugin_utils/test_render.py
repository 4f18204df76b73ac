"""The rendered tree's Argo CD sync waves: each component's kustomization.yaml annotates every
object of the folder exactly once (by kind), the object files carry no Argo CD annotation, and
the operators' files are the ones docs/gitops.md's kubectl sequence applies first.
`tests/integration/test_render.py` builds the same trees with `kubectl kustomize`."""

from __future__ import annotations

import pytest
import yaml

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
