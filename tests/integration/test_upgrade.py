"""playbooks/upgrade.yml end to end on the local control plane, the simulated OLM resolving from
the certified catalog's real edges: installed by site.yml at Network Operator 26.1.0 and GPU
Operator 25.10.1 with Manual approval, the inventory's pins moved to the newest releases; check
mode shows every InstallPlan and writes nothing; the upgrade approves exactly the InstallPlans of
each way, the Network Operator's and its NicClusterPolicy's before the GPU Operator's; a re-run
and site.yml afterwards write nothing. A downgrade, a target no channel reaches and a release
the cluster's OpenShift does not support are refused before any write."""

from __future__ import annotations

import json
import tarfile

import pytest

from ansible_collections.gpudirect.rdma.plugins.module_utils.steps import build_objects
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.plan import build_plan
from tests.harness.audit import AuditLog
from tests.harness.controlplane import ADMIN_USER, REPO_ROOT
from tests.integration.helpers import wait_for
from tests.integration.test_site import SIMULATED, installed_csvs, nodes_for, recap, site
from tests.simulator.core import DEFAULT_KNOBS
from tests.simulator.nodes import RHCOS
from tests.unit.inventories import inputs

UPGRADE = REPO_ROOT / "playbooks" / "upgrade.yml"
UNINSTALL = REPO_ROOT / "playbooks" / "uninstall.yml"
INVENTORY = "shared-device-roce"
MANUAL = json.dumps(
    {
        "gpudirect_rdma_operators": {
            "network_operator": {"approval": "Manual"},
            "gpu_operator": {"approval": "Manual"},
        }
    }
)
OLDER = (
    "-e",
    MANUAL,
    "-e",
    "gpudirect_rdma_network_operator_release=26.1.0",
    "-e",
    "gpudirect_rdma_gpu_operator_release=25.10.1",
)
NEWEST = build_plan(
    {**inputs(INVENTORY), "operators": json.loads(MANUAL)["gpudirect_rdma_operators"]}
)
NETWORK_TARGET = NEWEST["operators"]["network_operator"]["pinned_csv"]
GPU_TARGET = NEWEST["operators"]["gpu_operator"]["pinned_csv"]


# upgrade.yml's arguments: the example inventory on the simulated cluster, Manual approval.
UPGRADE_ARGS = (
    "-i",
    str(REPO_ROOT / "inventories" / INVENTORY),
    "-e",
    f"@{SIMULATED}",
    "-e",
    MANUAL,
)


def upgrade(run_playbook, *extra: str, check: bool = True):
    return run_playbook(
        UPGRADE,
        *UPGRADE_ARGS,
        *extra,
        check=check,
    )


@pytest.fixture(scope="module")
def installed_older(control_plane, run_playbook, harness, custom):
    """site.yml at the older releases on a plane without the collection's objects (OLM does not
    go back a release); everything removed again at the end."""
    run_playbook(UNINSTALL, "-e", "uninstall_timeout=90")
    nodes_for(harness, INVENTORY)
    first = site(run_playbook, INVENTORY, *OLDER)
    assert recap(first.stdout)["failed"] == 0
    csvs = installed_csvs(custom)
    assert csvs["nvidia-network-operator"] == "nvidia-network-operator.v26.1.0"
    assert csvs["gpu-operator-certified"] == "gpu-operator-certified.v25.10.1"
    yield
    run_playbook(UNINSTALL, "-e", "uninstall_timeout=90")


def approvals(audit: AuditLog) -> list[tuple[str, str]]:
    """(namespace, InstallPlan) of every InstallPlan the playbook patched (approved), in order."""
    return [
        (r.namespace, r.name)
        for r in audit.writes(ADMIN_USER)
        if r.resource == "installplans" and r.verb == "patch"
    ]


def test_site_refuses_the_new_pins_and_points_to_upgrade(
    installed_older, run_playbook, control_plane
):
    audit = AuditLog(control_plane.audit_log).mark()
    result = site(run_playbook, INVENTORY, "-e", MANUAL, check=False)
    assert result.returncode != 0
    assert (
        "NVIDIA GPU Operator: the cluster runs gpu-operator-certified.v25.10.1; "
        f"gpudirect_rdma_gpu_operator_release plans {GPU_TARGET}: an upgrade" in result.stdout
    )
    assert "Run playbooks/upgrade.yml" in result.stdout
    assert audit.writes(ADMIN_USER) == []


def test_check_mode_shows_every_install_plan_and_writes_nothing(
    installed_older, run_playbook, control_plane
):
    audit = AuditLog(control_plane.audit_log).mark()
    result = upgrade(run_playbook, "--check")
    assert recap(result.stdout)["failed"] == 0
    # The way as printed (the callback folds long lines).
    shown = " ".join(result.stdout.split())
    assert (
        "gpu_operator: gpu-operator-certified.v25.10.1 -> gpu-operator-certified.v26.3.3 "
        "(channel v26.3)" in shown
    )
    assert f"gpu_operator: gpu-operator-certified.v26.3.3 -> {GPU_TARGET} (channel v26.7)" in shown
    assert (
        "network_operator: nvidia-network-operator.v26.1.0 -> nvidia-network-operator.v26.4.0 "
        "(channel stable)" in shown
    )
    assert f"-> {NETWORK_TARGET} (channel " in shown
    assert [str(w) for w in audit.writes(ADMIN_USER)] == []


def test_a_target_no_channel_reaches_is_refused_before_any_write(
    installed_older, run_playbook, control_plane
):
    nowhere = {
        "gpudirect_rdma_operators": {
            "network_operator": {"approval": "Manual"},
            "gpu_operator": {
                "approval": "Manual",
                "starting_csv": "gpu-operator-certified.v99.0.0",
            },
        }
    }
    refused(
        run_playbook,
        control_plane,
        ("-e", json.dumps(nowhere)),
        "NVIDIA GPU Operator (OpenShift 4.20's catalog): installed "
        "gpu-operator-certified.v25.10.1, target gpu-operator-certified.v99.0.0: no channel of "
        "the catalog holds gpu-operator-certified.v99.0.0",
    )


def test_a_release_the_clusters_openshift_does_not_support_is_refused_before_any_write(
    installed_older, run_playbook, control_plane, knobs, custom
):
    """On OpenShift 4.17 GPU Operator 25.10.1 runs (NVIDIA: 4.14 to 4.21) and 26.7.2 is
    documented for 4.18 to 4.22: the upgrade is refused before any write, naming the range."""
    knobs({"openshift": {"version": "4.17.30"}})
    wait_for(lambda: cluster_version(custom) == "4.17.30", what="OpenShift 4.17.30")
    refused(
        run_playbook,
        control_plane,
        (),
        f"NVIDIA GPU Operator: the upgrade to {GPU_TARGET} is refused: NVIDIA supports NVIDIA "
        f"GPU Operator {GPU_TARGET.rsplit('.v', 1)[1]} on OpenShift 4.18 to 4.22, and the "
        "cluster runs 4.17.30",
    )
    knobs(DEFAULT_KNOBS)
    wait_for(
        lambda: cluster_version(custom) == DEFAULT_KNOBS["openshift"]["version"],
        what="the default OpenShift version",
    )


def test_an_rhcos_build_the_driver_toolkit_lacks_is_refused_before_any_write(
    installed_older, run_playbook, control_plane, knobs, custom
):
    """The drivers build with the Driver Toolkit image of each node's RHCOS: without it the
    upgrade's driver rollout would leave every node upgrade-failed."""
    knobs({"openshift": {**DEFAULT_KNOBS["openshift"], "driver_toolkit_missing": True}})
    wait_for(lambda: toolkit_tags(custom) == ["latest"], what="the toolkit without the build")
    audit = AuditLog(control_plane.audit_log).mark()
    result = upgrade(run_playbook, check=False)
    assert result.returncode != 0
    shown = " ".join(result.stdout.split())
    assert (
        f"ERROR driver-toolkit: 2 node(s) (worker-0, worker-1) run RHCOS {RHCOS}, and the "
        f"ImageStream openshift/driver-toolkit has no tag {RHCOS} (its tags: latest)" in shown
    ), result.stdout[-3000:]
    assert [str(w) for w in audit.writes(ADMIN_USER)] == []
    knobs(DEFAULT_KNOBS)
    wait_for(lambda: RHCOS in toolkit_tags(custom), what="the toolkit with the build again")


def toolkit_tags(custom) -> list[str]:
    stream = custom.get_namespaced_custom_object(
        "image.openshift.io", "v1", "openshift", "imagestreams", "driver-toolkit"
    )
    return [tag["name"] for tag in stream["spec"]["tags"]]


def test_the_upgrade_approves_exactly_the_way_in_the_order_that_keeps_gpudirect(
    installed_older, run_playbook, control_plane, custom, tmp_path
):
    audit = AuditLog(control_plane.audit_log).mark()
    result = upgrade(run_playbook, "-e", f"upgrade_report_dir={tmp_path}")
    assert recap(result.stdout)["failed"] == 0, result.stdout[-3000:]
    # The snapshot taken before the first write holds the CSVs that ran.
    (snapshot,) = (p for p in tmp_path.glob("*.tar.gz") if not p.is_symlink())
    with tarfile.open(snapshot) as archive:
        text = "".join(
            archive.extractfile(m).read().decode() for m in archive.getmembers() if m.isfile()
        )
    assert "nvidia-network-operator.v26.1.0" in text and "gpu-operator-certified.v25.10.1" in text
    # verify before the first write and after the last, side by side: the same rails, the same
    # transport, within 10 %.
    report = json.loads((tmp_path / "upgrade-report.json").read_text())
    assert report["comparison"]["passed"] is True
    assert [row["what"] for row in report["comparison"]["rows"]] == ["rail 0"]
    (rail,) = report["comparison"]["rows"]
    assert rail["before"] and rail["after"] and rail["before_transport"] == "GPUDirect (dmabuf)"
    for folder in ("verify-before", "verify-after"):
        assert json.loads((tmp_path / folder / "verify-report.json").read_text())["passed"]
    assert [w["operator"] for w in report["way"]][-2:] == ["network_operator", "gpu_operator"]
    csvs = installed_csvs(custom)
    assert csvs["nvidia-network-operator"] == NETWORK_TARGET
    assert csvs["gpu-operator-certified"] == GPU_TARGET
    writes = audit.writes(ADMIN_USER)
    approved = approvals(audit)
    network = [n for ns, n in approved if ns == "nvidia-network-operator"]
    gpu = [n for ns, n in approved if ns == "nvidia-gpu-operator"]
    assert len(gpu) == 2, approved  # 26.3.3, then the target
    assert network, approved
    # Every Network Operator InstallPlan, then its NicClusterPolicy with the new DOCA driver,
    # then the GPU Operator's: the order of the step table.
    order = [
        "network"
        if r.namespace == "nvidia-network-operator" and r.resource == "installplans"
        else "gpu"
        if r.namespace == "nvidia-gpu-operator" and r.resource == "installplans"
        else "nic-cluster-policy"
        for r in writes
        if r.resource == "installplans" or r.resource == "nicclusterpolicies"
    ]
    assert order == sorted(order, key=["network", "nic-cluster-policy", "gpu"].index), order
    assert "nic-cluster-policy" in order
    # Each approved plan names one CSV of the way; the Subscriptions are as planned again.
    for namespace, name in approved:
        plan = custom.get_namespaced_custom_object(
            "operators.coreos.com", "v1alpha1", namespace, "installplans", name
        )
        assert plan["spec"]["approved"] is True
    # The collection's Subscriptions only: a test file before this one on the worker's plane
    # may have left Subscriptions of these packages in a namespace of its own.
    subscriptions = custom.list_cluster_custom_object(
        "operators.coreos.com",
        "v1alpha1",
        "subscriptions",
        label_selector="app.kubernetes.io/managed-by=gpudirect.rdma",
    )["items"]
    approval = {
        s["spec"]["name"]: s["spec"].get("installPlanApproval")
        for s in subscriptions
        if s["spec"]["name"] in ("nvidia-network-operator", "gpu-operator-certified")
    }
    assert approval == {"nvidia-network-operator": "Manual", "gpu-operator-certified": "Manual"}
    (planned,) = [o for o in build_objects(NEWEST) if o["kind"] == "NicClusterPolicy"]
    policy = custom.get_cluster_custom_object(
        "mellanox.com", "v1alpha1", "nicclusterpolicies", "nic-cluster-policy"
    )
    assert policy["spec"]["ofedDriver"]["version"] == planned["spec"]["ofedDriver"]["version"]
    # Again: nothing to do, nothing written; site.yml agrees the cluster is as planned.
    again = AuditLog(control_plane.audit_log).mark()
    rerun = upgrade(run_playbook)
    assert recap(rerun.stdout)["changed"] == 0, rerun.stdout[-3000:]
    converged = site(run_playbook, INVENTORY, "-e", MANUAL)
    assert recap(converged.stdout)["changed"] == 0
    assert [str(w) for w in again.writes(ADMIN_USER)] == []


def test_a_downgrade_is_refused_before_any_write(installed_older, run_playbook, control_plane):
    refused(
        run_playbook,
        control_plane,
        ("-e", "gpudirect_rdma_gpu_operator_release=26.3.3"),
        f"NVIDIA GPU Operator: installed {GPU_TARGET}, target gpu-operator-certified.v26.3.3: "
        "that is a downgrade, "
        "which OLM cannot do",
    )


def cluster_version(custom) -> str | None:
    live = custom.get_cluster_custom_object(
        "config.openshift.io", "v1", "clusterversions", "version"
    )
    return ((live.get("status") or {}).get("desired") or {}).get("version")


def refused(run_playbook, control_plane, extra: tuple, words: str) -> None:
    """upgrade.yml fails in its preflight with words among the errors, and writes nothing."""
    audit = AuditLog(control_plane.audit_log).mark()
    result = upgrade(run_playbook, *extra, check=False)
    assert result.returncode != 0
    shown = " ".join(result.stdout.split())
    assert f"ERROR operator-versions: {words}" in shown, result.stdout[-3000:]
    assert "nothing was written to the cluster" in shown
    assert [str(w) for w in audit.writes(ADMIN_USER)] == []
