"""The simulator plays OLM the way OLM behaves: Subscription -> InstallPlan (held for approval
with installPlanApproval: Manual) -> ClusterServiceVersion from the real bundle -> Succeeded;
OperatorGroup mistakes and knobs for failure and delay. And it registers fake GPU + NIC nodes."""

from __future__ import annotations

import copy
import time

import pytest
from kubernetes import client
from kubernetes.client.rest import ApiException

from tests.integration.helpers import wait_for
from tests.simulator.core import World, list_cluster
from tests.simulator.informer import WatchingApiClient
from tests.simulator.nodes import HARDWARE_ANNOTATION, NFD_GPU_NIC_LABELS, register_nodes

OLM = ("operators.coreos.com", "v1alpha1")


def _operator_group(custom, namespace, targets=None):
    custom.create_namespaced_custom_object(
        "operators.coreos.com",
        "v1",
        namespace,
        "operatorgroups",
        {
            "apiVersion": "operators.coreos.com/v1",
            "kind": "OperatorGroup",
            "metadata": {"name": "group", "namespace": namespace},
            "spec": {"targetNamespaces": [namespace] if targets is None else targets},
        },
    )


def _subscribe(custom, namespace, package, **spec):
    body = {
        "apiVersion": "operators.coreos.com/v1alpha1",
        "kind": "Subscription",
        "metadata": {"name": package, "namespace": namespace},
        "spec": {
            "name": package,
            "source": spec.pop("source", "certified-operators"),
            "sourceNamespace": "openshift-marketplace",
            **spec,
        },
    }
    return custom.create_namespaced_custom_object(*OLM, namespace, "subscriptions", body)


def _get(custom, namespace, plural, name):
    try:
        return custom.get_namespaced_custom_object(*OLM, namespace, plural, name)
    except ApiException as error:
        if error.status == 404:
            return None
        raise


def _list(custom, namespace, plural):
    return custom.list_namespaced_custom_object(*OLM, namespace, plural)["items"]


def _subscription_status(custom, namespace, name):
    return (_get(custom, namespace, "subscriptions", name) or {}).get("status") or {}


def _csv_phase(custom, namespace, name):
    csv = _get(custom, namespace, "clusterserviceversions", name)
    return ((csv or {}).get("status") or {}).get("phase")


def _subscribe_manually_to_26_3_3(custom, namespace):
    """An OperatorGroup and a Subscription to GPU Operator 26.3.3 with Manual approval."""
    _operator_group(custom, namespace)
    _subscribe(
        custom,
        namespace,
        "gpu-operator-certified",
        channel="v26.3",
        installPlanApproval="Manual",
        startingCSV="gpu-operator-certified.v26.3.3",
    )


def test_default_catalog_sources_are_ready(custom):
    for name in ("redhat-operators", "certified-operators"):
        source = custom.get_namespaced_custom_object(
            *OLM, "openshift-marketplace", "catalogsources", name
        )
        assert source["status"]["connectionState"]["lastObservedState"] == "READY"


def test_manual_install_plan_waits_for_approval_then_csv_succeeds(custom, namespace):
    _subscribe_manually_to_26_3_3(custom, namespace)
    plan_name = wait_for(
        lambda: (
            _subscription_status(custom, namespace, "gpu-operator-certified")
            .get("installPlanRef", {})
            .get("name")
        ),
        what="an InstallPlan referenced by the Subscription",
    )
    plan = _get(custom, namespace, "installplans", plan_name)
    assert plan["spec"]["approval"] == "Manual"
    assert plan["spec"]["approved"] is False
    assert plan["spec"]["clusterServiceVersionNames"] == ["gpu-operator-certified.v26.3.3"]
    assert plan["status"]["phase"] == "RequiresApproval"
    status = _subscription_status(custom, namespace, "gpu-operator-certified")
    assert status["state"] == "UpgradePending"
    assert status["currentCSV"] == "gpu-operator-certified.v26.3.3"

    # Unapproved, nothing is installed however long one waits.
    time.sleep(1.5)
    assert (
        _get(custom, namespace, "installplans", plan_name)["status"]["phase"] == "RequiresApproval"
    )
    assert _list(custom, namespace, "clusterserviceversions") == []

    custom.patch_namespaced_custom_object(
        *OLM, namespace, "installplans", plan_name, {"spec": {"approved": True}}
    )
    wait_for(
        lambda: _csv_phase(custom, namespace, "gpu-operator-certified.v26.3.3") == "Succeeded",
        what="the CSV to reach Succeeded",
    )
    csv = _get(custom, namespace, "clusterserviceversions", "gpu-operator-certified.v26.3.3")
    phases = [c["phase"] for c in csv["status"]["conditions"]]
    assert phases == ["Pending", "InstallReady", "Installing", "Succeeded"]
    # Built from the real bundle: its alm-examples are there for the collection to read.
    assert '"kind": "ClusterPolicy"' in csv["metadata"]["annotations"]["alm-examples"]
    assert _get(custom, namespace, "installplans", plan_name)["status"]["phase"] == "Complete"
    status = wait_for(
        lambda: (
            (s := _subscription_status(custom, namespace, "gpu-operator-certified")).get("state")
            == "AtLatestKnown"
            and s
        ),
        what="the Subscription to reach AtLatestKnown",
    )
    assert status["installedCSV"] == "gpu-operator-certified.v26.3.3"


def test_a_subscription_that_lost_its_plan_reference_takes_up_the_same_plan(custom, namespace):
    """A tick that created an InstallPlan and then lost the race to write the Subscription's
    status leaves the plan without a reference; the next tick finds the plan of that generation
    (OLM's ensureInstallPlan) instead of making a second one (the upgrade tests under load saw
    two pending plans for one CSV)."""
    _subscribe_manually_to_26_3_3(custom, namespace)

    def referenced():
        ref = _subscription_status(custom, namespace, "gpu-operator-certified").get(
            "installPlanRef"
        )
        return ref and ref["name"]

    first = wait_for(referenced, what="an InstallPlan referenced by the Subscription")
    subscription = _get(custom, namespace, "subscriptions", "gpu-operator-certified")
    subscription["status"] = {"lastUpdated": subscription["status"]["lastUpdated"]}
    custom.replace_namespaced_custom_object_status(
        *OLM, namespace, "subscriptions", "gpu-operator-certified", subscription
    )
    assert wait_for(referenced, what="the Subscription to reference a plan again") == first
    time.sleep(1.5)
    plans = _list(custom, namespace, "installplans")
    assert [p["metadata"]["name"] for p in plans] == [first]
    assert referenced() == first


def test_automatic_approval_installs_the_newest_bundle_of_the_channel(custom, namespace):
    _operator_group(custom, namespace)
    _subscribe(custom, namespace, "nfd", source="redhat-operators", channel="stable")
    status = wait_for(
        lambda: (s := _subscription_status(custom, namespace, "nfd")).get("installedCSV") and s,
        what="the nfd Subscription to be installed",
    )
    assert status["installedCSV"] == "nfd.v5.0.0"
    plan = _get(custom, namespace, "installplans", status["installPlanRef"]["name"])
    assert plan["spec"]["approved"] is True
    wait_for(
        lambda: _csv_phase(custom, namespace, "nfd.v5.0.0") == "Succeeded", what="CSV Succeeded"
    )


def test_csv_without_an_operator_group_fails_until_one_exists(custom, namespace):
    _subscribe(custom, namespace, "nvidia-network-operator", channel="v26.4")
    wait_for(
        lambda: _csv_phase(custom, namespace, "nvidia-network-operator.v26.4.1") == "Failed",
        what="the CSV to fail for want of an OperatorGroup",
    )
    csv = _get(custom, namespace, "clusterserviceversions", "nvidia-network-operator.v26.4.1")
    assert csv["status"]["reason"] == "NoOperatorGroup"
    _operator_group(custom, namespace)
    wait_for(
        lambda: _csv_phase(custom, namespace, "nvidia-network-operator.v26.4.1") == "Succeeded",
        what="the CSV to succeed once the OperatorGroup exists",
    )


def test_operator_group_watching_all_namespaces_is_unsupported_for_the_network_operator(
    custom, namespace
):
    _operator_group(custom, namespace, targets=[])
    _subscribe(custom, namespace, "nvidia-network-operator", channel="v26.4")
    wait_for(
        lambda: _csv_phase(custom, namespace, "nvidia-network-operator.v26.4.1") == "Failed",
        what="the CSV to fail",
    )
    csv = _get(custom, namespace, "clusterserviceversions", "nvidia-network-operator.v26.4.1")
    assert csv["status"]["reason"] == "UnsupportedOperatorGroup"
    assert "all namespaces" in csv["status"]["message"]


def test_unknown_channel_fails_resolution(custom, namespace):
    _operator_group(custom, namespace)
    _subscribe(custom, namespace, "gpu-operator-certified", channel="v1.0")
    conditions = wait_for(
        lambda: _subscription_status(custom, namespace, "gpu-operator-certified").get("conditions"),
        what="a Subscription condition",
    )
    assert conditions[0]["type"] == "ResolutionFailed"
    assert (
        "no operators found in channel v1.0 of package gpu-operator-certified"
        in conditions[0]["message"]
    )
    assert _list(custom, namespace, "installplans") == []


def test_missing_catalog_source_is_reported(custom, namespace):
    _operator_group(custom, namespace)
    _subscribe(custom, namespace, "nfd", source="my-mirror", channel="stable")
    conditions = wait_for(
        lambda: _subscription_status(custom, namespace, "nfd").get("conditions"),
        what="a Subscription condition",
    )
    assert conditions[0]["type"] == "CatalogSourcesUnhealthy"
    assert "openshift-marketplace/my-mirror missing" in conditions[0]["message"]


def test_knob_makes_a_package_fail(custom, namespace, knobs):
    knobs({"olm": {"failing_packages": ["nfd"]}})
    _operator_group(custom, namespace)
    _subscribe(custom, namespace, "nfd", source="redhat-operators", channel="stable")
    wait_for(lambda: _csv_phase(custom, namespace, "nfd.v5.0.0") == "Failed", what="CSV Failed")
    csv = _get(custom, namespace, "clusterserviceversions", "nfd.v5.0.0")
    assert csv["status"]["reason"] == "InstallComponentFailed"


def test_knob_makes_a_catalog_unhealthy(custom, knobs):
    knobs({"olm": {"unhealthy_catalogs": ["certified-operators"]}})

    def state():
        source = custom.get_namespaced_custom_object(
            *OLM, "openshift-marketplace", "catalogsources", "certified-operators"
        )
        return source["status"]["connectionState"]["lastObservedState"]

    wait_for(lambda: state() == "TRANSIENT_FAILURE", what="the catalog to turn unhealthy")


def test_knob_delays_every_step(custom, namespace, knobs):
    knobs({"delay_seconds": 1})
    _operator_group(custom, namespace)
    began = time.monotonic()
    _subscribe(custom, namespace, "nfd", source="redhat-operators", channel="stable")
    wait_for(
        lambda: _csv_phase(custom, namespace, "nfd.v5.0.0") == "Succeeded",
        timeout=60,
        what="CSV Succeeded",
    )
    # resolve, install, then four CSV phases: six delayed steps.
    assert time.monotonic() - began >= 6


def test_fake_nodes_carry_nfd_labels_and_hardware(harness, core):
    names = register_nodes(harness, 2, prefix="sim-gpu")
    assert names == ["sim-gpu-0", "sim-gpu-1"]
    for name in names:
        node = core.read_node(name)
        for label, value in NFD_GPU_NIC_LABELS.items():
            assert node.metadata.labels[label] == value
        assert "node-role.kubernetes.io/worker" in node.metadata.labels
        assert '"ens8f0np0"' in node.metadata.annotations[HARDWARE_ANNOTATION]
        ready = next(c for c in node.status.conditions if c.type == "Ready")
        assert ready.status == "True"


def test_fake_nodes_without_nfd_labels(harness, core):
    (name,) = register_nodes(harness, 1, prefix="sim-bare", nfd_labels=False)
    labels = core.read_node(name).metadata.labels
    assert not any(label in labels for label in NFD_GPU_NIC_LABELS)


@pytest.fixture(autouse=True)
def _cleanup_nodes(core):
    yield
    for node in core.list_node().items:
        if node.metadata.name.startswith("sim-"):
            core.delete_node(node.metadata.name)


def _approve(custom, namespace, plan_name):
    custom.patch_namespaced_custom_object(
        *OLM, namespace, "installplans", plan_name, {"spec": {"approved": True}}
    )


def _pending_plan(custom, namespace, package, csv_name):
    """The Subscription's InstallPlan once it names csv_name."""

    def found():
        ref = _subscription_status(custom, namespace, package).get("installPlanRef") or {}
        plan = _get(custom, namespace, "installplans", ref["name"]) if ref else None
        names = ((plan or {}).get("spec") or {}).get("clusterServiceVersionNames")
        return plan if names == [csv_name] else None

    return wait_for(found, what=f"an InstallPlan for {csv_name}")


def _installed(custom, namespace, package, csv_name, at_latest: bool = True):
    """The Subscription's status once csv_name is installed and Succeeded (and, with at_latest,
    nothing newer is pending in its channel)."""
    return wait_for(
        lambda: (
            (s := _subscription_status(custom, namespace, package)).get("installedCSV") == csv_name
            and (s.get("state") == "AtLatestKnown" or not at_latest)
            and _csv_phase(custom, namespace, csv_name) == "Succeeded"
            and s
        ),
        what=f"{csv_name} installed",
    )


GPU = "gpu-operator-certified"


def install_manually(custom, namespace, package, channel, csv_name):
    """The package at csv_name with Manual approval (its InstallPlan approved), installed."""
    _operator_group(custom, namespace)
    _subscribe(
        custom,
        namespace,
        package,
        channel=channel,
        installPlanApproval="Manual",
        startingCSV=csv_name,
    )
    _approve(
        custom, namespace, _pending_plan(custom, namespace, package, csv_name)["metadata"]["name"]
    )
    _installed(custom, namespace, package, csv_name)


def hold(custom, namespace, csv_name, message):
    """An administrator's override on the CSV's OperatorCondition: not upgradeable."""
    custom.patch_namespaced_custom_object(
        "operators.coreos.com",
        "v2",
        namespace,
        "operatorconditions",
        csv_name,
        {
            "spec": {
                "overrides": [
                    {
                        "type": "Upgradeable",
                        "status": "False",
                        "reason": "Maintenance",
                        "message": message,
                        "lastTransitionTime": "2026-12-01T00:00:00Z",
                    }
                ]
            }
        },
    )


def test_a_channel_change_upgrades_to_its_head_and_the_old_csv_is_replaced(custom, namespace):
    """From the certified catalog template of OpenShift 4.20: every GPU Operator CSV's skipRange
    covers all older versions, so moving the channel from v26.3 to v26.7 is one InstallPlan to
    v26.7's head; the new CSV replaces the old, which goes Replacing, Deleting, then away."""
    install_manually(custom, namespace, GPU, "v26.3", f"{GPU}.v26.3.3")
    # v26.3's head is installed: nothing more to resolve there.
    time.sleep(1.5)
    assert len(_list(custom, namespace, "installplans")) == 1
    custom.patch_namespaced_custom_object(
        *OLM, namespace, "subscriptions", GPU, {"spec": {"channel": "v26.7"}}
    )
    plan = _pending_plan(custom, namespace, GPU, f"{GPU}.v26.7.2")
    assert plan["status"]["phase"] == "RequiresApproval"
    assert plan["status"]["bundleLookups"][0]["replaces"] == f"{GPU}.v26.3.3"
    assert _subscription_status(custom, namespace, GPU)["state"] == "UpgradePending"
    _approve(custom, namespace, plan["metadata"]["name"])
    _installed(custom, namespace, GPU, f"{GPU}.v26.7.2")
    csv = _get(custom, namespace, "clusterserviceversions", f"{GPU}.v26.7.2")
    assert csv["spec"]["replaces"] == f"{GPU}.v26.3.3"
    wait_for(
        lambda: _get(custom, namespace, "clusterserviceversions", f"{GPU}.v26.3.3") is None,
        what="the replaced CSV to be deleted",
    )


def test_an_operator_condition_holds_the_upgrade_and_a_deleted_plan_is_resolved_again(
    custom, namespace
):
    install_manually(custom, namespace, GPU, "v26.3", f"{GPU}.v26.3.3")
    # OLM made the CSV's OperatorCondition; an administrator's override holds upgrades.
    condition = wait_for(
        lambda: _operator_condition(custom, namespace, f"{GPU}.v26.3.3"),
        what="the CSV's OperatorCondition",
    )
    hold(custom, namespace, condition["metadata"]["name"], "frozen for the quarter-end jobs")
    custom.patch_namespaced_custom_object(
        *OLM, namespace, "subscriptions", GPU, {"spec": {"channel": "v26.7"}}
    )
    plan = _pending_plan(custom, namespace, GPU, f"{GPU}.v26.7.2")
    # A pending plan freezes the Subscription: a channel edit back does nothing until it goes.
    custom.patch_namespaced_custom_object(
        *OLM, namespace, "subscriptions", GPU, {"spec": {"channel": "v26.3"}}
    )
    time.sleep(1.5)
    assert (
        _subscription_status(custom, namespace, GPU)["installPlanRef"]["name"]
        == (plan["metadata"]["name"])
    )
    custom.delete_namespaced_custom_object(
        *OLM, namespace, "installplans", plan["metadata"]["name"]
    )
    wait_for(
        lambda: (
            (s := _subscription_status(custom, namespace, GPU)).get("state") == "AtLatestKnown"
            and s.get("currentCSV") == f"{GPU}.v26.3.3"
        ),
        what="the Subscription resolved again on v26.3: nothing newer there",
    )
    custom.patch_namespaced_custom_object(
        *OLM, namespace, "subscriptions", GPU, {"spec": {"channel": "v26.7"}}
    )
    _approve(
        custom,
        namespace,
        _pending_plan(custom, namespace, GPU, f"{GPU}.v26.7.2")["metadata"]["name"],
    )
    held = wait_for(
        lambda: (
            (csv := _get(custom, namespace, "clusterserviceversions", f"{GPU}.v26.7.2"))
            and csv.get("status", {}).get("reason") == "OperatorConditionNotUpgradeable"
            and csv
        ),
        what="the new CSV held Pending",
    )
    assert held["status"]["phase"] == "Pending"
    assert held["status"]["message"] == (
        "The operator is not upgradeable: frozen for the quarter-end jobs"
    )
    assert _csv_phase(custom, namespace, f"{GPU}.v26.3.3") == "Replacing"
    custom.patch_namespaced_custom_object(
        "operators.coreos.com",
        "v2",
        namespace,
        "operatorconditions",
        f"{GPU}.v26.3.3",
        {"spec": {"overrides": None}},
    )
    _installed(custom, namespace, GPU, f"{GPU}.v26.7.2")


def _operator_condition(custom, namespace, name):
    try:
        return custom.get_namespaced_custom_object(
            "operators.coreos.com", "v2", namespace, "operatorconditions", name
        )
    except ApiException as error:
        if error.status == 404:
            return None
        raise


def test_the_network_operator_moves_one_release_at_a_time_on_stable(custom, namespace):
    """Its CSVs carry no skipRange; the certified catalog's stable channel replaces one release
    with the next, so with Automatic approval OLM walks every release to the head, one
    InstallPlan each."""
    _operator_group(custom, namespace)
    network = "nvidia-network-operator"
    _subscribe(custom, namespace, network, channel="stable", startingCSV=f"{network}.v25.10.0")
    _installed(custom, namespace, network, f"{network}.v26.7.1")
    plans = _list(custom, namespace, "installplans")
    steps = sorted(
        (p["spec"]["generation"], p["spec"]["clusterServiceVersionNames"][0]) for p in plans
    )
    assert [name for _generation, name in steps] == [
        f"{network}.v{v}"
        for v in ("25.10.0", "26.1.0", "26.4.0", "26.4.1", "26.7.0", "26.7.0-1", "26.7.1")
    ], steps
    # Each replaced CSV goes once its successor has installed: the last one stays.
    wait_for(
        lambda: (
            [c["metadata"]["name"] for c in _list(custom, namespace, "clusterserviceversions")]
            == [f"{network}.v26.7.1"]
        ),
        what="the replaced CSVs to be deleted",
    )


def test_the_simulators_csv_list_by_metadata_is_a_full_list_and_rereads_only_what_moved(
    harness, custom, namespace
):
    """CSVs are listed by metadata and kept from tick to tick (core.LISTED_BY_METADATA): the
    objects must be those a full list gives, a changed CSV read again, a deleted one gone."""
    _operator_group(custom, namespace)
    _subscribe(custom, namespace, "nvidia-network-operator", channel="v26.7")
    wait_for(
        lambda: [
            c
            for c in _list(custom, namespace, "clusterserviceversions")
            if (c.get("status") or {}).get("phase") == "Succeeded"
        ],
        what="a CSV Succeeded (no status write while the lists are compared)",
    )
    world = World(harness)

    def listed():
        world.listed.clear()
        return list_cluster(world, *OLM, "clusterserviceversions")

    def full():
        return custom.list_cluster_custom_object(*OLM, "clusterserviceversions")["items"]

    def by_uid(items):
        return sorted(items, key=lambda item: item["metadata"]["uid"])

    assert by_uid(listed()) == by_uid(full())
    (csv,) = _list(custom, namespace, "clusterserviceversions")
    csv["metadata"].setdefault("labels", {})["test.gpudirect.rdma/moved"] = "yes"
    custom.replace_namespaced_custom_object(
        *OLM, namespace, "clusterserviceversions", csv["metadata"]["name"], csv
    )
    again = {c["metadata"]["uid"]: c for c in listed()}
    assert again[csv["metadata"]["uid"]]["metadata"]["labels"]["test.gpudirect.rdma/moved"] == "yes"
    assert by_uid(again.values()) == by_uid(full())
    custom.delete_namespaced_custom_object(
        *OLM, namespace, "clusterserviceversions", csv["metadata"]["name"]
    )
    assert csv["metadata"]["uid"] not in {c["metadata"]["uid"] for c in listed()}


def test_the_simulators_watched_reads_match_the_api_server_and_see_every_write(
    harness, core, namespace
):
    """The simulator reads through WatchingApiClient (tests/simulator/informer.py): a list is
    answered from the copy its watch keeps, and must be what the API server answers, with the
    simulator's own writes at once and everybody else's once the watch brings them."""
    configuration = copy.copy(harness.configuration)
    watching = WatchingApiClient(configuration)
    try:
        watched = client.CoreV1Api(watching)

        def names(api, **selector):
            return sorted(
                c.metadata.name for c in api.list_namespaced_config_map(namespace, **selector).items
            )

        assert names(watched) == names(core)  # the first list starts the collection's watch
        body = {"metadata": {"name": "theirs", "labels": {"owner": "them"}}, "data": {"a": "1"}}
        core.create_namespaced_config_map(namespace, body)
        wait_for(lambda: "theirs" in names(watched), timeout=5, what="the watch to bring it")
        assert watching.changed.is_set() and watching.events > 0
        watched.create_namespaced_config_map(
            namespace, {"metadata": {"name": "mine", "labels": {"owner": "me"}}}
        )
        assert "mine" in names(watched)  # no wait: its own write is in the copy
        assert names(watched, label_selector="owner in (them)") == ["theirs"]
        assert names(watched, label_selector="owner!=them") == names(
            core, label_selector="owner!=them"
        )
        assert watched.read_namespaced_config_map("theirs", namespace).data == {"a": "1"}
        core.patch_namespaced_config_map("theirs", namespace, {"data": {"a": "2"}})
        wait_for(
            lambda: watched.read_namespaced_config_map("theirs", namespace).data == {"a": "2"},
            timeout=5,
            what="the watch to bring the change",
        )
        core.delete_namespaced_config_map("theirs", namespace)
        wait_for(lambda: "theirs" not in names(watched), timeout=5, what="the deletion")
        with pytest.raises(ApiException) as gone:
            watched.read_namespaced_config_map("theirs", namespace)
        assert gone.value.status == 404
        watched.delete_namespaced_config_map("mine", namespace)
        assert names(watched) == names(core)
    finally:
        watching.close()
