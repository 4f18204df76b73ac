"""The operators: their OLM subscriptions, the releases and their images, the mirror registry and
its credentials, and the OpenShift versions they support."""

from __future__ import annotations

import re

from ansible_collections.gpudirect.rdma.plugins.module_utils.steps import OPERATORS as DECLARED
from ansible_collections.gpudirect.rdma.plugins.module_utils.steps.network_operator import (
    REGISTRY_SECRET_NAME,
)
from ansible_collections.gpudirect.rdma.plugins.module_utils.upgrade.graph import (
    channels_from_entries,
)
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.releases import (
    CATALOG_MINORS,
    GPU_OPERATOR_RELEASES,
    NETWORK_OPERATOR_RELEASES,
    UPGRADE_GRAPHS,
)

from .checks import (
    PlanError,
    choice,
    dns_label,
    dns_subdomain,
    known_keys,
    mapping,
    minor_version,
    string,
)
from .inputs import OPTIONS, Inputs

# The operators the steps install (steps/<step>.py declares each one's OLM defaults), by their
# key of gpudirect_rdma_operators.
OPERATORS = tuple(DECLARED)
OPERATOR_KEYS = ("namespace", "channel", "source", "source_namespace", "approval", "starting_csv")
APPROVALS = ("Automatic", "Manual")
# The OpenShift releases whose documentation (the GPUDirect RDMA chapter) this collection follows.
SUPPORTED_OPENSHIFT = ("4.17", "4.22")
_OPENSHIFT_VERSION = re.compile(r"^4\.[0-9]{1,2}$")


RELEASE_CATALOGS = {
    "network_operator_release": NETWORK_OPERATOR_RELEASES,
    "gpu_operator_release": GPU_OPERATOR_RELEASES,
}


def releases(inputs: Inputs) -> tuple[str, str]:
    """The Network and GPU Operator releases, as strings (YAML reads 26.7 as a number); a
    release no certified catalog carries is refused: OLM could not install it."""
    chosen = []
    for key, known in RELEASE_CATALOGS.items():
        release = choice(inputs.name(key), str(inputs[key]), tuple(OPTIONS[key]["choices"]))
        if not known[release]["catalogs"]:
            carried = [r for r in OPTIONS[key]["choices"] if known[r]["catalogs"]]
            raise PlanError(
                inputs.name(key),
                release,
                f"a release a certified catalog carries ({', '.join(carried)}): {release} was "
                f"never published in the catalogs of OpenShift {CATALOG_MINORS[0]} to "
                f"{CATALOG_MINORS[-1]}, so OLM cannot install it",
            )
        chosen.append(release)
    return tuple(chosen)


def olm(inputs: Inputs, network_release: str, gpu_release: str) -> dict:
    """Each operator's OLM subscription: the defaults, the catalog source, the overrides; an
    opt-in operator only when its opt-in is on (its overrides are checked either way)."""
    name = inputs.name("operators")
    given = inputs.checked("operators")
    known_keys(name, given, OPERATORS, "operator")
    catalog_source = inputs.checked("catalog_source")
    catalog_namespace = inputs.checked("catalog_source_namespace")
    gpu = GPU_OPERATOR_RELEASES[gpu_release]
    network = NETWORK_OPERATOR_RELEASES[network_release]
    # The CSV a Manual approval installs unless the inventory names one, and the channel of an
    # operator that declares none: the releases' own.
    release_csvs = {"network_operator": network["csv_name"], "gpu_operator": gpu["csv_name"]}
    release_channels = {"network_operator": network["channel"], "gpu_operator": gpu["channel"]}
    result = {}
    for operator, declared in DECLARED.items():
        if declared.opt_in and not inputs.checked(declared.opt_in):
            mapping(f"{name}.{operator}", given.get(operator))
            continue
        where = f"{name}.{operator}"
        override = mapping(where, given.get(operator))
        known_keys(where, override, OPERATOR_KEYS)
        channel = override.get("channel") or declared.channel or release_channels.get(operator)
        approval = choice(f"{where}.approval", override.get("approval", "Automatic"), APPROVALS)
        starting_csv = override.get("starting_csv")
        if approval == "Manual" and not starting_csv:
            starting_csv = release_csvs.get(operator) or declared.default_csv
            if not starting_csv:
                raise PlanError(
                    f"{where}.starting_csv",
                    None,
                    "the CSV to install (e.g. nfd.v4.20.0) when approval is Manual: "
                    "only the InstallPlan of that CSV is approved",
                )
        result[operator] = {
            "namespace": dns_label(
                f"{where}.namespace", override.get("namespace", declared.namespace)
            ),
            "package": declared.package,
            "operator_group": declared.operator_group,
            "subscription": declared.subscription,
            "channel": string(f"{where}.channel", channel, expected="an OLM channel name"),
            "source": dns_subdomain(
                f"{where}.source",
                override.get("source") or catalog_source or declared.source,
            ),
            "source_namespace": dns_label(
                f"{where}.source_namespace",
                override.get("source_namespace") or catalog_namespace,
            ),
            "approval": approval,
            "starting_csv": starting_csv and dns_subdomain(f"{where}.starting_csv", starting_csv),
            # The CSV the plan means to run, and the input that says so: the release's for the
            # NVIDIA operators, whatever the approval; None where nothing pins one.
            "pinned_csv": override.get("starting_csv")
            or release_csvs.get(operator)
            or starting_csv,
            "pinned_by": _pinned_by(inputs, where, operator, override, starting_csv, release_csvs),
            "catalog": channel_entries(operator, channel),
        }
    return result


def channel_entries(operator: str, channel: str) -> dict[str, list[str] | None] | None:
    """What the certified catalog of each OpenShift minor whose template was read holds in the
    channel, newest (the head) first: None for a minor without the channel; None for an operator
    whose catalog the release data does not keep."""
    graphs = UPGRADE_GRAPHS.get(operator)
    if not graphs:
        return None
    found = {}
    for minor, channels in graphs.items():
        if channel in channels:
            parsed = channels_from_entries({channel: channels[channel]})[channel]
            found[minor] = [entry.name for entry in parsed.head_first()]
        else:
            found[minor] = None
    return found


def _pinned_by(inputs: Inputs, where, operator, override, starting_csv, release_csvs):
    """The input that names the CSV an operator should run (see pinned_csv), as users write it."""
    if override.get("starting_csv"):
        return f"{where}.starting_csv"
    if operator in release_csvs:
        return inputs.name(f"{operator}_release")
    if starting_csv:
        return f"{where}.approval Manual (its default starting_csv)"
    return None


def registry_secret(inputs: Inputs, network_operator_namespace: str) -> dict | None:
    """Where the pull Secret made from the registry credentials goes, or None without them.
    The credentials themselves stay out of the plan (it is printed and registered): only
    their presence is checked here, and no message ever repeats them."""
    username = inputs["image_registry_username"]
    password = inputs["image_registry_password"]
    if username in (None, "") and password in (None, ""):
        return None
    user_variable = inputs.name("image_registry_username")
    password_variable = inputs.name("image_registry_password")
    if not isinstance(password, str) or not password:
        raise PlanError(
            password_variable,
            None,
            f"a non-empty string when {user_variable} is set",
            shown="nothing"
            if password in (None, "")
            else f"a value of type {type(password).__name__}",
        )
    if not isinstance(username, str) or not username:
        raise PlanError(
            user_variable,
            username,
            f"a non-empty user name when {password_variable} is set",
        )
    if ":" in username or any(c.isspace() for c in username):
        raise PlanError(
            user_variable,
            username,
            "a user name without ':' or white space (a registry login joins them as user:password)",
        )
    if inputs["image_registry"] in (None, ""):
        raise PlanError(
            inputs.name("image_registry"),
            inputs["image_registry"],
            f"the mirror registry the credentials of {user_variable} are for "
            "(host, optional port and path)",
        )
    return {
        "name": REGISTRY_SECRET_NAME,
        "namespace": network_operator_namespace,
        "registry": str(inputs["image_registry"]).split("/", 1)[0],
    }


def images(inputs: Inputs, network_release: str) -> dict:
    registry = inputs.checked("image_registry")
    driver_repository = inputs.checked("doca_driver_repository")
    result = {}
    for component, image in NETWORK_OPERATOR_RELEASES[network_release]["components"].items():
        repository = image["repository"]
        if registry:
            # Keep the path below the host: nvcr.io/nvidia/mellanox -> <mirror>/nvidia/mellanox
            repository = registry.rstrip("/") + "/" + repository.split("/", 1)[1]
        if component == "ofedDriver" and driver_repository:
            repository = driver_repository
        result[component] = {**image, "repository": repository}
    return result


def openshift_version(inputs: Inputs, key: str = "openshift_version") -> str | None:
    """An OpenShift minor version input (the inventory's, or the target's); None when unset."""
    given = inputs[key]
    if given in (None, ""):
        return None
    if isinstance(given, float):
        raise PlanError(
            inputs.name(key),
            given,
            "a quoted string such as '4.20' (YAML reads 4.20 unquoted as the number 4.2)",
        )
    return string(
        inputs.name(key), str(given), _OPENSHIFT_VERSION, "an OpenShift minor version such as 4.20"
    )


def _release_range(versions: str) -> tuple[str, str]:
    low, _dash, high = versions.partition("-")
    return low.lstrip("v"), (high or low).lstrip("v")


def _operator_support(title: str, known: dict, release: str) -> dict:
    """A release's OpenShift range and catalogs; for each minor whose catalog was read, the
    releases that catalog carries, and of those the ones whose range covers the minor."""

    def covers(data: dict, minor: str) -> bool:
        low, high = _release_range(data["openshift_versions"])
        return minor_version(low) <= minor_version(minor) <= minor_version(high)

    low, high = _release_range(known[release]["openshift_versions"])
    carried = {m: [r for r, data in known.items() if m in data["catalogs"]] for m in CATALOG_MINORS}
    return {
        "component": f"{title} {release}",
        "minimum": low,
        "maximum": high,
        "catalogs": list(known[release]["catalogs"]),
        "catalog_minors": list(CATALOG_MINORS),
        "carried": carried,
        "covering": {m: [r for r in carried[m] if covers(known[r], m)] for m in CATALOG_MINORS},
    }


def openshift_support(network_release: str, gpu_release: str) -> list[dict]:
    """Which OpenShift minor versions the collection and the chosen operator releases support
    (the first entry the collection's own), with the certified catalogs of each release."""
    low, high = SUPPORTED_OPENSHIFT
    return [
        {"component": "gpudirect.rdma", "minimum": low, "maximum": high},
        _operator_support("NVIDIA Network Operator", NETWORK_OPERATOR_RELEASES, network_release),
        _operator_support("NVIDIA GPU Operator", GPU_OPERATOR_RELEASES, gpu_release),
    ]
