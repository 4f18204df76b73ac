"""Least privilege: a user who is not a cluster administrator (a client certificate in no group,
so not system:masters), bound only to the ClusterRole and Role the collection ships in rbac/,
runs site.yml, verify.yml and uninstall.yml; every request of theirs is allowed and every write
of the runs is theirs (audit log). Without the bindings, site.yml and uninstall.yml stop at their
first request, and so does verify.yml, naming the user, the verb, the resource and the shipped
file; with the ClusterRole but not the test pods' Role, verify.yml stops when it creates its
first pod."""

from __future__ import annotations

import contextlib
import copy
import functools
import json
import time
from pathlib import Path

import pytest
import yaml
from kubernetes import dynamic
from kubernetes.dynamic.exceptions import NotFoundError

from ansible_collections.gpudirect.rdma.plugins.module_utils.steps import build_objects
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.plan import build_plan
from tests.harness.audit import AuditLog
from tests.harness.controlplane import (
    CONTROLLER_MANAGER_USER,
    HARNESS_USER,
    REPO_ROOT,
    SIMULATOR_USER,
)
from tests.integration.test_site import SIMULATED, nodes_for, recap, site
from tests.integration.test_verify import verify
from tests.unit.inventories import inputs
from tests.unit.test_rbac import resource_of

RBAC = REPO_ROOT / "rbac" / "gpudirect-rdma-installer.yaml"
BINDINGS = REPO_ROOT / "rbac" / "gpudirect-rdma-installer-binding.yaml"
UNINSTALL = REPO_ROOT / "playbooks" / "uninstall.yml"
USER = "gpudirect-rdma-operator-team"
NOBODY = "gpudirect-rdma-nobody"
TEST_PODS_NAMESPACE = "default"  # gpudirect_rdma_network_namespace of the inventories
# Two configurations that between them create every kind but two: the four operators and their
# operands, a MachineConfig (crio memlock) and its pool's gates, SR-IOV node policies and networks
# (the node states' gate), verify.yml's pods; then host device over InfiniBand with nv-ipam, so
# site.yml prunes the SR-IOV objects and creates IPPools and a HostDeviceNetwork as the user.
# (MacvlanNetwork, IPoIBNetwork and SriovIBNetwork take the same rules as their neighbours;
# tests/unit/test_rbac.py covers every configuration's requests without a cluster.)
FIRST = "sriov-legacy-roce"
SECOND = "host-device-infiniband"


def documents(path: Path) -> list[dict]:
    return [doc for doc in yaml.safe_load_all(path.read_text()) if doc]


def bindings_for(user: str, kinds=("ClusterRoleBinding", "RoleBinding")) -> list[dict]:
    """The shipped example bindings, their subjects replaced by one user."""
    found = []
    for binding in documents(BINDINGS):
        if binding["kind"] in kinds:
            binding = copy.deepcopy(binding)
            binding["subjects"] = [
                {"kind": "User", "apiGroup": "rbac.authorization.k8s.io", "name": user}
            ]
            found.append(binding)
    return found


@pytest.fixture(scope="module")
def kube(harness) -> dynamic.DynamicClient:
    return dynamic.DynamicClient(harness)


def _apply(kube, obj: dict) -> None:
    resource = kube.resources.get(api_version=obj["apiVersion"], kind=obj["kind"])
    namespace = TEST_PODS_NAMESPACE if resource.namespaced else None
    resource.server_side_apply(body=obj, namespace=namespace, field_manager="test-harness")


def _delete(kube, obj: dict) -> None:
    resource = kube.resources.get(api_version=obj["apiVersion"], kind=obj["kind"])
    namespace = TEST_PODS_NAMESPACE if resource.namespaced else None
    with contextlib.suppress(NotFoundError):
        resource.delete(name=obj["metadata"]["name"], namespace=namespace)


@pytest.fixture(scope="module")
def roles(kube):
    """The shipped ClusterRole, and the Role in the test pods' namespace, as `oc apply -n` puts
    them."""
    shipped = documents(RBAC)
    for obj in shipped:
        _apply(kube, obj)
    yield shipped
    for obj in shipped:
        _delete(kube, obj)


@pytest.fixture
def bind(kube, roles):
    """bind(user, kinds): the shipped example bindings for one user; removed afterwards."""
    made = []

    def make(user: str, kinds=("ClusterRoleBinding", "RoleBinding")) -> None:
        for binding in bindings_for(user, kinds):
            _apply(kube, binding)
            made.append(binding)

    yield make
    for binding in made:
        _delete(kube, binding)


@pytest.fixture(scope="module")
def kubeconfigs(control_plane, tmp_path_factory) -> dict[str, Path]:
    """Client certificates in no group: RBAC alone decides what they may do."""
    folder = tmp_path_factory.mktemp("users")
    found = {}
    for user in (USER, NOBODY):
        found[user] = folder / f"{user}.kubeconfig"
        control_plane.write_kubeconfig(found[user], user, [])
    return found


def refused(requests) -> list[str]:
    return [str(r) for r in requests if r.code == 403]


def one_line(result) -> str:
    return " ".join(result.stdout.split())


# uninstall.yml's options for removing everything, namespaces and MachineConfigs too.
EVERYTHING = (
    "-e",
    "uninstall_namespaces=true",
    "-e",
    "uninstall_machine_configs=true",
)


def resources(plans: list[dict]) -> set[str]:
    """The resources the plans' objects and their test pods are stored as."""
    kinds = {(o["apiVersion"], o["kind"]) for plan in plans for o in build_objects(plan)}
    kinds |= {("v1", "Pod"), ("v1", "Service"), ("v1", "Secret")}
    return {resource_of(api_version, kind) for api_version, kind in kinds}


def test_site_verify_and_uninstall_as_a_user_bound_only_to_the_shipped_roles(
    run_playbook, harness, kube, bind, kubeconfigs, control_plane, tmp_path
):
    # From an empty cluster (an earlier test on a shared control plane may have left the
    # operators installed), so the user's runs create every object and not only what changed.
    run_playbook(UNINSTALL, "-e", f"@{SIMULATED}", *EVERYTHING)
    nodes_for(harness, FIRST)
    bind(USER)
    audit = AuditLog(control_plane.audit_log).mark()
    as_user = functools.partial(run_playbook, kubeconfig=kubeconfigs[USER])
    seconds = {}

    began = time.monotonic()
    assert recap(site(as_user, FIRST).stdout)["failed"] == 0
    seconds["site.yml sriov_legacy"] = time.monotonic() - began

    # Without the Role in the test pods' namespace, verify.yml stops at its first pod.
    _delete(kube, bindings_for(USER, ["RoleBinding"])[0])
    began = time.monotonic()
    unbound = verify(as_user, FIRST, tmp_path, check=False)
    seconds["verify.yml without the Role"] = time.monotonic() - began
    assert unbound.returncode != 0
    assert (
        f'forbidden: the API server does not allow user "{USER}" to patch pods in namespace '
        f"{TEST_PODS_NAMESPACE}" in one_line(unbound)
    ), one_line(unbound)[-3000:]
    assert "the Role gpudirect-rdma-verify" in one_line(unbound)
    bind(USER, ["RoleBinding"])

    # With the NCCL test: its Secret (by name), headless Service, workers and launcher.
    began = time.monotonic()
    assert recap(verify(as_user, FIRST, tmp_path, "-e", "verify_nccl=true").stdout)["failed"] == 0
    seconds["verify.yml with the NCCL test"] = time.monotonic() - began
    report = json.loads((tmp_path / "verify-report.json").read_text())
    assert report["passed"] is True and report["nccl"][0]["passed"] is True

    nodes_for(harness, SECOND)
    began = time.monotonic()
    assert recap(site(as_user, SECOND).stdout)["failed"] == 0
    seconds["site.yml host_device"] = time.monotonic() - began

    began = time.monotonic()
    removed = as_user(UNINSTALL, "-e", f"@{SIMULATED}", *EVERYTHING)
    seconds["uninstall.yml"] = time.monotonic() - began
    assert recap(removed.stdout)["failed"] == 0
    print({name: round(value, 1) for name, value in seconds.items()})

    mine = audit.requests(USER)
    refusals = refused(mine)
    assert refusals and all("pods" in r for r in refusals), refusals  # the Role-less verify only
    assert len(refusals) == 1, refusals
    writers = {w.user for w in audit.writes()} - {USER, HARNESS_USER, SIMULATOR_USER}
    assert writers <= {CONTROLLER_MANAGER_USER}, writers  # (the namespace controller)
    plans = [build_plan(inputs(FIRST)), build_plan(inputs(SECOND))]
    wanted = resources(plans)
    created = {w.resource for w in audit.writes(USER) if w.verb == "patch" and w.code < 300}
    deleted = {w.resource for w in audit.writes(USER) if w.verb == "delete" and w.code < 300}
    assert wanted <= created, sorted(wanted - created)
    assert wanted | {"clusterserviceversions"} <= deleted, sorted(wanted - deleted)


def test_without_the_bindings_each_playbook_stops_at_its_first_request(
    run_playbook, harness, kubeconfigs, control_plane, roles, tmp_path
):
    nodes_for(harness, FIRST)
    audit = AuditLog(control_plane.audit_log).mark()
    as_nobody = functools.partial(run_playbook, kubeconfig=kubeconfigs[NOBODY], check=False)

    result = site(as_nobody, FIRST, check=False)
    assert result.returncode != 0
    output = one_line(result)
    assert "preflight found 1 error(s); nothing was written to the cluster" in output, output
    assert (
        f'ERROR api: forbidden: the API server does not allow user "{NOBODY}" to get '
        "clusterversions.config.openshift.io" in output
    ), output[-3000:]
    assert "gpudirect.rdma needs the ClusterRole gpudirect-rdma-installer" in output
    assert "rbac/gpudirect-rdma-installer.yaml" in output

    result = as_nobody(UNINSTALL, "-e", f"@{SIMULATED}")
    assert result.returncode != 0
    output = one_line(result)
    assert (
        f'forbidden: the API server does not allow user "{NOBODY}" to list pods '
        "(pods is forbidden:" in output
    ), output[-3000:]
    assert "rbac/gpudirect-rdma-installer.yaml" in output

    result = verify(as_nobody, FIRST, tmp_path, check=False)
    assert result.returncode != 0
    output = one_line(result)
    # Its first request looks for the pods an interrupted run left.
    assert (
        f'forbidden: the API server does not allow user "{NOBODY}" to list pods (pods is '
        "forbidden:" in output
    ), output[-3000:]
    assert "rbac/gpudirect-rdma-installer.yaml" in output

    assert audit.writes(NOBODY) == [], "not even a refused write was attempted"
