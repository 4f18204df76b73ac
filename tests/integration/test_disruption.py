"""Disruptions announced and agreed, on a control plane of this module's own, as a user meets
them: a first install lists what it does to the nodes and goes on; switching to another inventory
(MachineConfigs removed, the DOCA driver and device plugin replaced) is refused before any write,
in --check and in a real run, naming the objects, the nodes and the variable that agrees; with
it, the run goes on. Then the canary of docs/disruption.md: one node first in a node group of
its own, then the rest, each step refused until agreed and touching only the nodes it names."""

from __future__ import annotations

import json
import subprocess

import pytest
import yaml
from kubernetes import client

from tests.harness.audit import AuditLog
from tests.harness.controlplane import ADMIN_USER, REPO_ROOT, api_client, started
from tests.integration.helpers import playbook_command, playbook_env
from tests.integration.test_site import SIMULATED, nodes_for, recap

SITE = REPO_ROOT / "playbooks" / "site.yml"
NOT_AGREED = ["-e", json.dumps({"gpudirect_rdma_allow_disruption": []})]


@pytest.fixture(scope="module")
def plane(tmp_path_factory):
    with started(tmp_path_factory.mktemp("disruption")) as plane:
        nodes_for(api_client(plane.harness_kubeconfig), "shared-device-roce")
        yield plane


def site(plane, inventory, *extra: str):
    """site.yml as a user runs it: the simulator's timeouts, no disruption agreed unless extra
    agrees; returns the return code and the output."""
    result = subprocess.run(
        playbook_command(
            SITE,
            "-i",
            str(inventory if "/" in str(inventory) else REPO_ROOT / "inventories" / inventory),
            "-e",
            f"@{SIMULATED}",
            *NOT_AGREED,
            *extra,
        ),
        cwd=REPO_ROOT,
        env=playbook_env(plane.kubeconfig),
        capture_output=True,
        text=True,
        check=False,
    )
    return result.returncode, result.stdout + result.stderr


def clear(text: str) -> str:
    return " ".join(text.split())


def machine_configs(plane) -> list[str]:
    custom = client.CustomObjectsApi(api_client(plane.harness_kubeconfig))
    items = custom.list_cluster_custom_object(
        "machineconfiguration.openshift.io", "v1", "machineconfigs"
    )["items"]
    return sorted(i["metadata"]["name"] for i in items)


def test_a_switch_of_inventory_is_refused_until_agreed(plane):
    code, out = site(plane, "shared-device-roce")
    assert code == 0, out[-4000:]
    # A first install says what it does to the nodes, and goes on.
    text = clear(out)
    assert "preflight disruption: reboot: node configuration added (MachineConfig " in text, out[
        -4000:
    ]
    assert "on 2 node(s): worker-0, worker-1" in text
    assert "(none of them is configured yet)" in text
    before = machine_configs(plane)
    assert "99-worker-blacklist-irdma" in before

    audit = AuditLog(plane.audit_log).mark()
    for mode in (["--check"], []):
        code, out = site(plane, "sriov-legacy-roce", *mode)
        text = clear(out)
        assert code != 0, out[-4000:]
        assert "preflight found" in text and "nothing was written to the cluster" in text
        assert (
            "ERROR disruption: reboot: node configuration removed (MachineConfig "
            "99-machine-config-udev-network, MachineConfig 99-worker-blacklist-irdma) on 2 "
            "node(s): worker-0, worker-1" in text
        ), text[-4000:]
        assert "set gpudirect_rdma_allow_disruption: [reboot] in the inventory or -e " in text
        assert "ERROR disruption: device-plugin: RDMA shared device plugin removed" in text
        assert "Traceback" not in out
    assert audit.writes(ADMIN_USER) == [], [str(w) for w in audit.writes(ADMIN_USER)]
    assert machine_configs(plane) == before

    # Agreed (as a survey would give it, one string): the run goes on, and says what it did.
    code, out = site(plane, "sriov-legacy-roce", "-e", "gpudirect_rdma_allow_disruption=all")
    assert code == 0, out[-4000:]
    assert "(agreed: gpudirect_rdma_allow_disruption)" in clear(out)
    assert "99-worker-blacklist-irdma" not in machine_configs(plane)
    # Converged: nothing left to agree to.
    code, out = site(plane, "sriov-legacy-roce")
    assert code == 0 and recap(out)["changed"] == 0, out[-4000:]
    assert "preflight disruption" not in out


CANARY_VERSION = "doca3.2.2-25.10-2.4.1.0-4"
WAVE = "gpudirect.example.com/wave"


def label(plane, node: str, wave: str) -> None:
    core = client.CoreV1Api(api_client(plane.harness_kubeconfig))
    core.patch_node(node, {"metadata": {"labels": {WAVE: wave}}})


def inventory(tmp_path, name: str, groups: list[dict]) -> str:
    """shared-device-roce's variables with the node model and these node groups."""
    variables = yaml.safe_load(
        (REPO_ROOT / "inventories" / "shared-device-roce" / "group_vars" / "all.yml").read_text()
    )
    variables.update(gpudirect_rdma_nic_policy_model="node", gpudirect_rdma_node_groups=groups)
    folder = tmp_path / name
    (folder / "group_vars").mkdir(parents=True)
    (folder / "hosts.yml").write_text("all:\n  hosts:\n    localhost:\n")
    (folder / "group_vars" / "all.yml").write_text(yaml.safe_dump(variables))
    return str(folder)


def nic_node_policy(plane, name: str) -> dict:
    custom = client.CustomObjectsApi(api_client(plane.harness_kubeconfig))
    return custom.get_cluster_custom_object("mellanox.com", "v1alpha1", "nicnodepolicies", name)


def errors(out: str) -> list[str]:
    """The disruption errors of a run, each once (Ansible prints a failure's message twice)."""
    lines = (line.strip() for line in out.splitlines())
    return list(dict.fromkeys(line for line in lines if line.startswith("ERROR   disruption")))


def test_a_canary_node_first_then_the_rest(plane, tmp_path):
    """docs/disruption.md's procedure: a standing canary node group (worker-0) beside the rest
    (worker-1), alike; a change goes to the canary first, then to the rest. Each run is refused
    naming only the nodes it reloads, until agreed, and leaves the other group as it was."""
    main = {"name": "main", "node_selector": {WAVE: "main"}, "ipam_range": "192.168.2.0/24"}
    canary = {**main, "name": "canary", "node_selector": {WAVE: "canary"}}
    label(plane, "worker-0", "canary")
    label(plane, "worker-1", "main")
    alike = inventory(tmp_path, "alike", [main, canary])
    code, out = site(plane, alike, "-e", "gpudirect_rdma_allow_disruption=all")
    assert code == 0, out[-4000:]
    generation = nic_node_policy(plane, "main")["metadata"]["generation"]

    # The canary takes the new driver first: refused, naming worker-0 only.
    new = {**canary, "doca_driver_version": CANARY_VERSION}
    first = inventory(tmp_path, "first", [main, new])
    code, out = site(plane, first)
    assert code != 0, out[-4000:]
    assert errors(out) == [
        "ERROR   disruption: driver-reload: DOCA driver changed (NicNodePolicy canary) on 1 "
        "node(s): worker-0: the DOCA driver is loaded, reloaded or removed: every port of these "
        "nodes' NVIDIA NICs goes down meanwhile, and pods using them lose their RDMA devices. 1 "
        "of them already run the collection's configuration: to let this run do it, set "
        "gpudirect_rdma_allow_disruption: [driver-reload] in the inventory or -e "
        "gpudirect_rdma_allow_disruption=driver-reload (all: every effect); or change the "
        "inventory back"
    ], out[-4000:]
    code, out = site(plane, first, "-e", "gpudirect_rdma_allow_disruption=driver-reload")
    assert code == 0, out[-4000:]
    assert nic_node_policy(plane, "canary")["spec"]["ofedDriver"]["version"] == CANARY_VERSION
    # The rest did not move.
    assert nic_node_policy(plane, "main")["metadata"]["generation"] == generation

    # Then the rest: the main group takes the new driver; only worker-1 is named.
    rest = inventory(tmp_path, "rest", [{**main, "doca_driver_version": CANARY_VERSION}, new])
    code, out = site(plane, rest)
    assert code != 0
    (error,) = errors(out)
    assert error.startswith(
        "ERROR   disruption: driver-reload: DOCA driver changed (NicNodePolicy main) on 1 "
        "node(s): worker-1: "
    ), error
    code, out = site(
        plane, rest, "-e", json.dumps({"gpudirect_rdma_allow_disruption": ["driver-reload"]})
    )
    assert code == 0, out[-4000:]
    assert nic_node_policy(plane, "main")["spec"]["ofedDriver"]["version"] == CANARY_VERSION


def allocatable(plane, node: str) -> dict:
    core = client.CoreV1Api(api_client(plane.harness_kubeconfig))
    return core.read_node(node).status.allocatable or {}


def test_a_node_selector_narrows_the_nic_cluster_policy_and_names_the_nodes_left(plane, tmp_path):
    """gpudirect_rdma_node_selector on worker-0 alone, with the cluster model: the
    NicClusterPolicy's DaemonSets follow it (its nodeAffinity), and worker-1, which loses its
    driver and device plugin, is named before anything is written."""
    label(plane, "worker-0", "canary")
    label(plane, "worker-1", "main")
    narrow = ["-e", json.dumps({"gpudirect_rdma_node_selector": {WAVE: "canary"}})]
    code, out = site(plane, "shared-device-roce", *narrow)
    assert code != 0
    removed = [e for e in errors(out) if " removed " in e]
    assert any(
        e.startswith(
            "ERROR   disruption: driver-reload: DOCA driver removed (NicNodePolicy main) on"
        )
        and "1 node(s): worker-1:" in e
        for e in removed
    ), errors(out)
    code, out = site(
        plane, "shared-device-roce", *narrow, "-e", "gpudirect_rdma_allow_disruption=all"
    )
    assert code == 0, out[-4000:]
    custom = client.CustomObjectsApi(api_client(plane.harness_kubeconfig))
    policy = custom.get_cluster_custom_object(
        "mellanox.com", "v1alpha1", "nicclusterpolicies", "nic-cluster-policy"
    )
    terms = policy["spec"]["nodeAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"]
    assert terms["nodeSelectorTerms"] == [
        {"matchExpressions": [{"key": WAVE, "operator": "In", "values": ["canary"]}]}
    ]
    resource = "rdma/rdma_shared_device_eth"
    assert resource in allocatable(plane, "worker-0")
    assert resource not in allocatable(plane, "worker-1")
