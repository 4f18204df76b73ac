"""Diagnostics on the local control plane: a site.yml run whose NicClusterPolicy never gets ready
leaves an archive naming the gate and its object with its status, beside the CSVs, InstallPlans,
nodes and events; a failed bandwidth test leaves its pods' logs and statuses; diagnostics.yml on
demand reads and writes nothing; an API server out of reach gives no archive, and says why."""

from __future__ import annotations

import re
import tarfile
from pathlib import Path

import yaml

from ansible_collections.gpudirect.rdma.plugins.module_utils.builders.common import (
    MANAGED_BY,
    MANAGED_BY_LABEL,
)
from tests.harness.controlplane import ADMIN_USER, REPO_ROOT, free_port
from tests.integration.test_site import nodes_for, recap, site
from tests.integration.test_verify import verify, verify_pods_left

DIAGNOSTICS = REPO_ROOT / "playbooks" / "diagnostics.yml"
ARCHIVE = re.compile(r"(/\S+/gpudirect-rdma-diagnostics-\d{8}T\d{6}Z(?:-\d+)?\.tar\.gz)")


def archive_in(folder: Path) -> Path:
    archives = sorted(folder.glob("gpudirect-rdma-diagnostics-2*.tar.gz"))
    assert len(archives) == 1, f"expected one archive in {folder}, found {archives}"
    latest = folder / "gpudirect-rdma-diagnostics-latest.tar.gz"
    assert latest.resolve() == archives[0].resolve(), "the latest link names it"
    return archives[0]


def read_archive(path: Path) -> dict[str, str]:
    """The archive's files by their path below its top folder, in the archive's order."""
    with tarfile.open(path) as tar:
        return {
            member.name.split("/", 1)[1]: tar.extractfile(member).read().decode()
            for member in tar.getmembers()
            if member.isfile()
        }


def printed(output: str, folder: Path) -> Path:
    """The archive the output names, which must be the one in folder."""
    found = {Path(p) for p in ARCHIVE.findall(output)}
    assert found == {archive_in(folder)}, output[-3000:]
    return found.pop()


def test_a_site_run_that_fails_on_a_gate_leaves_an_archive_naming_the_gate_and_its_objects(
    run_playbook, harness, core, custom, knobs, tmp_path
):
    nodes_for(harness, "host-device-roce")
    # The GPU Operator comes after the failing gate, and this inventory does not ask for the
    # Maintenance Operator; an earlier test of this worker may have left either installed. The
    # archive reads the collection's namespaces only: other tests' CSVs in their own unlabelled
    # namespaces are not among them.
    owned = {
        namespace.metadata.name
        for namespace in core.list_namespace(
            label_selector=f"{MANAGED_BY_LABEL}={MANAGED_BY}"
        ).items
    }
    installed_before = {
        csv["metadata"]["namespace"]
        for csv in custom.list_cluster_custom_object(
            "operators.coreos.com", "v1alpha1", "clusterserviceversions"
        )["items"]
    } & owned
    knobs({"network_operator": {"never_ready": True}})
    result = site(
        run_playbook,
        "host-device-roce",
        "-e",
        "network_operator_ready_timeout=5",
        "-e",
        f"diagnostics_dir={tmp_path}",
        check=False,
    )
    assert result.returncode != 0
    output = " ".join(result.stdout.split())
    assert "gate 'NicClusterPolicy ready' not reached after 5s" in output
    archive = printed(output, tmp_path)
    assert f"Diagnostics: {archive}" in output
    assert f"Diagnostics archive: {archive}" in output
    assert recap(result.stdout)["failed"] == 1

    files = read_archive(archive)
    assert next(iter(files)) == "summary.yaml"
    summary = yaml.safe_load(files["summary.yaml"])
    assert summary["reachable"] is True
    assert summary["failure"]["task"] == (
        "NVIDIA Network Operator - operator through OLM, its NicClusterPolicy and NicNodePolicies, "
        "ready"
    )
    assert summary["failure"]["message"].startswith("gate 'NicClusterPolicy ready' not reached")
    gate = summary["gate"]
    assert (gate["gate"], gate["kind"], gate["name"], gate["path"], gate["expected"]) == (
        "NicClusterPolicy ready",
        "NicClusterPolicy",
        "nic-cluster-policy",
        "status.state",
        "status.state ready and, from 26.7, condition Ready True",
    )
    assert gate["seen"].startswith(
        "NicClusterPolicy nic-cluster-policy status.state is 'notReady', condition Ready False "
        "ComponentsNotReady; not ready: OFEDDriverReady False ComponentNotReady"
    ), gate["seen"]
    (policy,) = gate["objects"]
    assert (policy["kind"], policy["name"], policy["status"]["state"]) == (
        "NicClusterPolicy",
        "nic-cluster-policy",
        "notReady",
    )
    assert [o["metadata"]["name"] for o in yaml.safe_load(files["gate.yaml"])] == [
        "nic-cluster-policy"
    ]
    assert {
        "nvidia-network-operator",
        "openshift-nfd",
        "openshift-sriov-network-operator",
        "default",
    } <= set(summary["namespaces"])
    listed = [entry["file"] for entry in summary["files"]]
    assert listed == list(files)

    csvs = yaml.safe_load(files["clusterserviceversions.yaml"])
    expected = {
        "openshift-nfd": "Succeeded",
        "openshift-sriov-network-operator": "Succeeded",
        "nvidia-network-operator": "Succeeded",
    }
    expected.update(
        {ns: "Succeeded" for ns in installed_before - set(expected)},
    )
    assert {c["metadata"]["namespace"]: c["status"]["phase"] for c in csvs} == expected
    assert all("install" not in c["spec"] for c in csvs)
    assert all("alm-examples" not in c["metadata"].get("annotations", {}) for c in csvs)
    plans = yaml.safe_load(files["installplans.yaml"])
    assert {p["metadata"]["namespace"] for p in plans} == set(expected)
    nodes = yaml.safe_load(files["nodes.yaml"])
    assert sorted(n["metadata"]["name"] for n in nodes) == ["worker-0", "worker-1"]
    for node in nodes:
        assert node["metadata"]["labels"]["feature.node.kubernetes.io/pci-15b3.present"] == "true"
        assert "allocatable" in node["status"]
    assert isinstance(yaml.safe_load(files["events.yaml"]), list)
    assert yaml.safe_load(files["nicclusterpolicies.yaml"])[0]["status"]["state"] == "notReady"
    assert "secrets.yaml" not in files


def test_a_failed_bandwidth_test_leaves_its_pods_logs_and_statuses(
    run_playbook, harness, core, knobs, tmp_path
):
    nodes_for(harness, "shared-device-roce")
    site(run_playbook, "shared-device-roce")
    knobs({"perftest": {"bw_gbps": 42.5}})
    result = verify(
        run_playbook,
        "shared-device-roce",
        tmp_path,
        "-e",
        "verify_min_gbps=100",
        check=False,
    )
    assert result.returncode != 0
    output = " ".join(result.stdout.split())
    assert "average 42.5 Gb/s is below the floor of 100 Gb/s (verify_min_gbps)" in output
    archive = printed(output, tmp_path)  # beside the report
    assert f"Diagnostics: {archive}" in output
    assert verify_pods_left(core) == [], "the pods are removed after the diagnostics"

    files = read_archive(archive)
    summary = yaml.safe_load(files["summary.yaml"])
    assert (
        summary["failure"]["task"] == "Check that every pair moved GPU memory at the expected rate"
    )
    assert "below the floor" in summary["failure"]["message"]
    listed = yaml.safe_load(files["pods.yaml"])
    pods = {
        p["metadata"]["name"]: p["status"]["phase"]
        for p in listed
        if p["metadata"]["namespace"] == "default"
    }
    assert pods == {
        "gpudirect-rdma-verify-server": "Succeeded",
        "gpudirect-rdma-verify-client": "Succeeded",
    }
    # The operators' namespaces are read too: the drivers' pods are there.
    assert {"nvidia-driver-daemonset-worker-0", "mofed-worker-0"} <= {
        p["metadata"]["name"] for p in listed
    }
    logs = {path: text for path, text in files.items() if path.startswith("logs/default/")}
    assert sorted(logs) == [
        "logs/default/gpudirect-rdma-verify-client/perftest.log",
        "logs/default/gpudirect-rdma-verify-client/rdma-isolation.log",
        "logs/default/gpudirect-rdma-verify-server/perftest.log",
        "logs/default/gpudirect-rdma-verify-server/rdma-isolation.log",
    ]
    assert logs["logs/default/gpudirect-rdma-verify-client/rdma-isolation.log"].endswith(
        "no RDMA resource: none\n"
    )
    assert "42.50" in logs["logs/default/gpudirect-rdma-verify-client/perftest.log"]
    assert summary["unreadable"] == []


def test_diagnostics_on_demand_reads_the_cluster_and_writes_nothing_to_it(
    run_playbook, harness, audit, tmp_path
):
    nodes_for(harness, "shared-device-roce")
    with_inventory = run_playbook(
        DIAGNOSTICS,
        "-i",
        str(REPO_ROOT / "inventories" / "shared-device-roce"),
        "-e",
        f"diagnostics_dir={tmp_path / 'planned'}",
    )
    without = run_playbook(DIAGNOSTICS, "-e", f"diagnostics_dir={tmp_path / 'bare'}")
    assert audit.writes(ADMIN_USER) == [], [str(w) for w in audit.writes(ADMIN_USER)]
    assert audit.requests(ADMIN_USER), "the playbook read the cluster"
    for result, folder in ((with_inventory, "planned"), (without, "bare")):
        assert (recap(result.stdout)["changed"], recap(result.stdout)["failed"]) == (0, 0)
        archive = printed(" ".join(result.stdout.split()), tmp_path / folder)
        summary = yaml.safe_load(read_archive(archive)["summary.yaml"])
        assert summary["failure"] == "none: gathered on demand"
        assert summary["reachable"] is True
    planned = yaml.safe_load(read_archive(archive_in(tmp_path / "planned"))["summary.yaml"])
    bare = yaml.safe_load(read_archive(archive_in(tmp_path / "bare"))["summary.yaml"])
    assert "default" in planned["namespaces"], "the plan's network namespace"
    assert "default" not in bare["namespaces"]


def test_an_api_server_out_of_reach_gives_no_archive_and_says_why(
    run_playbook, control_plane, tmp_path
):
    port = free_port()
    kubeconfig = yaml.safe_load(control_plane.kubeconfig.read_text())
    for cluster in kubeconfig["clusters"]:
        cluster["cluster"]["server"] = f"https://127.0.0.1:{port}"
    unreachable = tmp_path / "unreachable.kubeconfig"
    unreachable.write_text(yaml.safe_dump(kubeconfig))
    result = run_playbook(
        DIAGNOSTICS,
        "-e",
        f"diagnostics_dir={tmp_path / 'out'}",
        kubeconfig=unreachable,
    )
    output = " ".join(result.stdout.split())
    assert not (tmp_path / "out").exists(), "nothing was read: no archive"
    assert (
        "No diagnostics archive: nothing could be read from the cluster: the API server could "
        "not be reached; nothing was read from it: " in output
    ), output[-3000:]
    assert f"https://127.0.0.1:{port}" in output and "Connection refused" in output
    assert "file(s) from None" not in output
