"""render.yml end to end: every example inventory renders a kustomize tree that `kubectl
kustomize` builds and that the real API server accepts as it is (nothing pruned); the built
objects carry Argo CD sync waves (operators, then operands in site.yml's order, then the RDMA
method) and, without those annotations, are exactly what the objects filter returns (what
site.yml applies); a bad inventory writes no file; re-rendering changes nothing; switching
method prunes the old files."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import pytest
import yaml
from kubernetes import client, dynamic

from ansible_collections.gpudirect.rdma.plugins.filter.objects import objects as objects_filter
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.plan import build_plan
from tests.harness.controlplane import REPO_ROOT, api_client, started
from tests.integration.helpers import assert_kept, server_side_dry_run
from tests.simulator.openshift import PLATFORM_NAMESPACES
from tests.unit.inventories import NAMES, inputs

RENDER = REPO_ROOT / "playbooks" / "render.yml"


def render(run_playbook, inventory: str, dest: Path, *extra: str, check: bool = True):
    return run_playbook(
        RENDER,
        "-i",
        str(REPO_ROOT / "inventories" / inventory),
        "-e",
        f"gpudirect_rdma_render_dir={dest}",
        *extra,
        check=check,
    )


def kubectl(control_plane) -> str:
    state = json.loads(control_plane.state_file.read_text())
    return str(Path(state["binaries"]) / "kubectl")


def build(control_plane, tree: Path) -> list[dict]:
    result = subprocess.run(
        [kubectl(control_plane), "kustomize", str(tree)],
        capture_output=True,
        text=True,
        check=False,
    )
    assert result.returncode == 0, result.stderr
    return [d for d in yaml.safe_load_all(result.stdout) if d]


@pytest.fixture(scope="module")
def resources(tmp_path_factory):
    """A control plane of its own, empty of the collection's objects, so that every rendered
    object can be tried with a dry-run create whatever other tests applied to the shared one.
    Without the simulator: a dry-run create asks the API server alone (no operator is installed
    here, so the simulator would serve no webhook either). The Namespaces every OpenShift
    cluster has, which the tree writes into and does not make (the console's dashboards'), are
    made as the simulator makes them."""
    with started(tmp_path_factory.mktemp("render"), simulator=False) as plane:
        found = dynamic.DynamicClient(api_client(plane.harness_kubeconfig))
        for name in PLATFORM_NAMESPACES:
            namespace = {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": name}}
            server_side_dry_run(found, namespace)
        yield found


# Every example as it is, and each of the six configurations with the node model (their one
# implicit group's NicNodePolicy).
SINGLE_GROUP = [
    n for n in NAMES if len(build_plan(inputs(n))["groups"]) == 1 and n != "multi-rail-hgx"
]
CASES = [*NAMES, *(f"{n}:node" for n in SINGLE_GROUP)]


@pytest.fixture(scope="module", params=CASES)
def rendered(request, run_playbook, tmp_path_factory):
    """Each case rendered once by render.yml: (inventory, tree, playbook result)."""
    inventory, _colon, model = request.param.partition(":")
    tree = tmp_path_factory.mktemp(request.param.replace(":", "-")) / "tree"
    extra = ("-e", f"gpudirect_rdma_nic_policy_model={model}") if model else ()
    return request.param, tree, render(run_playbook, inventory, tree, *extra)


def test_render_is_built_by_kustomize_and_accepted_by_the_server(
    rendered, control_plane, resources
):
    _inventory, tree, result = rendered
    assert "changed=1" in result.stdout
    files = sorted(p.relative_to(tree).as_posix() for p in tree.rglob("*.yaml"))
    assert "kustomization.yaml" in files
    objects = build(control_plane, tree)
    per_file = [p for p in files if not p.endswith("kustomization.yaml")]
    assert len(objects) == len(per_file), "one object per file, all listed by the kustomizations"
    for obj in objects:
        stored = server_side_dry_run(resources, obj)
        assert_kept(
            stored["metadata"], obj["metadata"], f"{obj['kind']}/{obj['metadata']['name']} metadata"
        )
        for key in ("spec", "data"):
            if key in obj:
                assert_kept(stored[key], obj[key], f"{obj['kind']}/{obj['metadata']['name']} {key}")


ARGOCD = "argocd.argoproj.io/"
WAVE = ARGOCD + "sync-wave"
SYNC_OPTIONS = ARGOCD + "sync-options"
OPERATOR_KINDS = ("Namespace", "OperatorGroup", "Subscription")
# The operands in the order site.yml applies them and waits on them.
OPERAND_ORDER = (
    ("NodeFeatureDiscovery", "SriovOperatorConfig"),
    ("NicClusterPolicy",),
    ("NicNodePolicy", "MachineConfig"),
    ("ClusterPolicy",),
)
METHOD_FOLDERS = ("shared-device", "host-device", "sriov-legacy")
# API groups OpenShift serves before the four operators are installed.
PLATFORM_GROUPS = (
    "",
    "operators.coreos.com",
    "machineconfiguration.openshift.io",
    "monitoring.coreos.com",
)


def key(obj: dict) -> tuple:
    return obj["kind"], obj["metadata"].get("namespace"), obj["metadata"]["name"]


def without_argocd(obj: dict) -> dict:
    """The object without the annotations the kustomizations add for Argo CD."""
    metadata = {k: v for k, v in obj["metadata"].items() if k != "annotations"}
    kept = {
        k: v for k, v in obj["metadata"].get("annotations", {}).items() if not k.startswith(ARGOCD)
    }
    if kept:
        metadata["annotations"] = kept
    return {**obj, "metadata": metadata}


def test_argocd_sync_waves_order_the_tree_and_leave_the_objects_as_site_applies_them(
    rendered, control_plane
):
    case, tree, _result = rendered
    inventory, _colon, model = case.partition(":")
    built = build(control_plane, tree)
    waves: dict[str, list[int]] = {"operators": [], "operands": [], "method": [], "after": []}
    operand_waves = {}
    for obj in built:
        annotations = obj["metadata"].get("annotations", {})
        name = "/".join(filter(None, key(obj)))
        assert WAVE in annotations, f"{name} has no sync wave"
        wave = int(annotations[WAVE])
        folder = obj["metadata"]["labels"]["gpudirect.rdma/component"]
        if obj["kind"] in OPERATOR_KINDS:
            waves["operators"].append(wave)
        elif folder in METHOD_FOLDERS:
            waves["method"].append(wave)
        elif folder == "monitoring":
            waves["after"].append(wave)
        else:
            waves["operands"].append(wave)
            operand_waves.setdefault(obj["kind"], set()).add(wave)
        group = obj["apiVersion"].rpartition("/")[0]
        if group in PLATFORM_GROUPS:
            assert SYNC_OPTIONS not in annotations, name
        else:
            assert annotations[SYNC_OPTIONS] == "SkipDryRunOnMissingResource=true", name
    assert all(waves[k] for k in ("operators", "operands", "method")), waves
    assert max(waves["operators"]) < min(waves["operands"])
    assert max(waves["operands"]) < min(waves["method"])
    # The monitoring step's rules and dashboard last (multi-rail-hgx has it).
    assert bool(waves["after"]) == (inventory == "multi-rail-hgx"), waves
    assert max(waves["method"]) < min(waves["after"] or [99])
    order = [
        wave for step in OPERAND_ORDER for kind in step for wave in operand_waves.get(kind, ())
    ]
    assert order == sorted(order), f"operand waves out of site.yml's order: {operand_waves}"
    network = operand_waves.get("NicNodePolicy") or operand_waves["NicClusterPolicy"]
    assert max(network) < min(operand_waves["ClusterPolicy"]), (
        "the GPU driver comes after the network driver"
    )

    given = {**inputs(inventory), **({"nic_policy_model": model} if model else {})}
    expected = objects_filter(build_plan(given))
    assert {key(o): without_argocd(o) for o in built} == {key(o): o for o in expected}
    for path in tree.rglob("*.yaml"):
        if path.name != "kustomization.yaml":
            assert ARGOCD not in path.read_text(), f"{path}: Argo CD annotations in an object file"


def test_second_render_changes_nothing(run_playbook, tmp_path):
    tree = tmp_path / "tree"
    render(run_playbook, "shared-device-roce", tree)
    stamps = {p: p.stat().st_mtime_ns for p in tree.rglob("*.yaml")}
    second = render(run_playbook, "shared-device-roce", tree)
    assert "changed=0" in second.stdout
    assert {p: p.stat().st_mtime_ns for p in tree.rglob("*.yaml")} == stamps


def test_switching_method_removes_the_old_method_and_keeps_foreign_files(run_playbook, tmp_path):
    tree = tmp_path / "tree"
    render(run_playbook, "shared-device-roce", tree)
    (tree / "README.md").write_text("notes of the GitOps repository\n")
    (tree / "shared-device" / "extra.yaml").write_text("kind: ConfigMap\n")
    render(run_playbook, "sriov-legacy-roce", tree)
    assert not (tree / "shared-device" / "macvlannetwork-rdmashared-net.yaml").exists()
    assert (tree / "sriov-legacy" / "sriovnetwork-sriov-network.yaml").exists()
    assert (tree / "README.md").exists(), "a file the collection did not write is kept"
    assert (tree / "shared-device" / "extra.yaml").exists()
    resources = yaml.safe_load((tree / "kustomization.yaml").read_text())["resources"]
    assert "sriov-legacy" in resources
    assert "shared-device" not in resources


def test_a_tree_applied_with_kubectl_is_taken_over_by_site_in_one_line(
    run_playbook, control_plane, harness, tmp_path
):
    """docs/gitops.md's `oc apply --server-side` of the tree, then site.yml: every object already
    holds the planned content, so site.yml writes each once to own its fields, says why in one
    line, and its next run writes nothing."""
    from tests.harness.audit import AuditLog
    from tests.harness.controlplane import ADMIN_USER
    from tests.integration.test_site import nodes_for, recap, site
    from tests.integration.test_uninstall import uninstall_everything

    # Nothing of the collection's yet, as on a cluster the tree is applied to first.
    uninstall_everything(run_playbook)
    nodes_for(harness, "shared-device-roce")
    tree = tmp_path / "tree"
    render(run_playbook, "shared-device-roce", tree)
    applied = subprocess.run(
        [
            kubectl(control_plane),
            "--kubeconfig",
            str(control_plane.kubeconfig),
            "apply",
            "--server-side",
            "-k",
            str(tree),
        ],
        capture_output=True,
        text=True,
        check=False,
    )
    assert applied.returncode == 0, applied.stderr
    first = " ".join(site(run_playbook, "shared-device-roce").stdout.split())
    lines = re.findall(r"\d+ object\(s\) already hold the planned content[^\"]*", first)
    assert lines, first[-3000:]
    assert "applied once, its content unchanged, so that gpudirect.rdma owns its fields" in lines[0]
    assert "not yet managed" not in first, "no object is named on a line of its own"
    audit = AuditLog(control_plane.audit_log).mark()
    second = site(run_playbook, "shared-device-roce")
    assert recap(second.stdout)["changed"] == 0
    assert audit.writes(ADMIN_USER) == []
    # kubectl's claim on the fields is gone: a field a later plan drops is removed.
    policy = client.CustomObjectsApi(harness).get_cluster_custom_object(
        "mellanox.com", "v1alpha1", "nicclusterpolicies", "nic-cluster-policy"
    )
    appliers = {
        e["manager"] for e in policy["metadata"]["managedFields"] if e["operation"] == "Apply"
    }
    assert appliers == {"gpudirect.rdma"}, policy["metadata"]["managedFields"]


def test_survey_answers_as_extra_variables_plan_the_rails(run_playbook, tmp_path):
    """What an AAP survey passes: strings, blanks for the optional questions left empty."""
    tree = tmp_path / "tree"
    answers = {
        "gpudirect_rdma_interfaces": "ens8f0np0, ens8f1np0",
        "gpudirect_rdma_ipam_range": "192.168.2.0/24",
        "gpudirect_rdma_ipam_gateway": "",
        "gpudirect_rdma_ipam_exclude": "",
    }
    render(run_playbook, "shared-device-roce", tree, "-e", json.dumps(answers))
    networks = sorted(p.name for p in (tree / "shared-device").glob("macvlannetwork-*.yaml"))
    assert networks == [
        "macvlannetwork-rdmashared-net-rail0.yaml",
        "macvlannetwork-rdmashared-net-rail1.yaml",
    ]


def test_check_mode_writes_nothing(run_playbook, tmp_path):
    tree = tmp_path / "tree"
    result = render(run_playbook, "host-device-roce", tree, "--check")
    assert "changed=1" in result.stdout
    assert not tree.exists()


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (
            ["-e", "gpudirect_rdma_method=rdma"],
            "gpudirect_rdma_method: got 'rdma'; "
            "expected one of shared_device, host_device, sriov_legacy",
        ),
        (
            ["-e", "gpudirect_rdma_sriov_num_vfs=32"],
            "gpudirect_rdma_sriov_num_vfs: got 32; expected at most 16 VFs per PF on InfiniBand",
        ),
        (
            ["-e", "gpudirect_rdma_ipam_rnage=10.0.0.0/24"],
            "gpudirect_rdma_ipam_rnage: not a variable of gpudirect.rdma; did you mean "
            "gpudirect_rdma_ipam_range?",
        ),
    ],
)
def test_invalid_inventory_fails_with_the_variable_and_writes_no_file(
    run_playbook, tmp_path, extra, message
):
    tree = tmp_path / "tree"
    inventory = tmp_path / "inventory"
    shutil.copytree(REPO_ROOT / "inventories" / "sriov-legacy-infiniband", inventory)
    result = run_playbook(
        RENDER, "-i", str(inventory), "-e", f"gpudirect_rdma_render_dir={tree}", *extra, check=False
    )
    assert result.returncode != 0
    assert message in " ".join(result.stdout.split())
    assert not tree.exists()
