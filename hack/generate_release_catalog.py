"""Write plugins/plugin_utils/releases.json from the operators' release data: ../shared's
(reference/*-releases.yaml and the CSVs beside them) and this repository's for the releases
../shared lacks (hack/release-data.yaml, each value with its source).

The release data files stay where they are; only the facts the collection needs (OLM channels,
CSV names, NicClusterPolicy component images and versions, the GPU Operator's default
ClusterPolicy from its CSV alm-examples) are written into the collection.

    python hack/generate_release_catalog.py [--check]

--check exits 1 when the committed file holds other facts than the data says.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

import yaml

REPO_ROOT = Path(__file__).resolve().parents[1]
TARGET = REPO_ROOT / "plugins" / "plugin_utils" / "releases.json"
ADDED = REPO_ROOT / "hack" / "release-data.yaml"
# NicClusterPolicy components the collection configures.
COMPONENTS = (
    "ofedDriver",
    "rdmaSharedDevicePlugin",
    "sriovDevicePlugin",
    "ipoib",
    "nvIpam",
    "nicConfigurationOperator",
    "nicConfigurationDaemon",
    "docaTelemetryService",
)


def _version_key(version: str) -> tuple[int, ...]:
    return tuple(int(part) for part in version.split("."))


def _merged(shared: dict, added: dict, what: str) -> dict:
    both = sorted(set(shared) & set(added))
    if both:
        raise SystemExit(f"{ADDED}: {what} {', '.join(both)} already in ../shared's release data")
    return dict(
        sorted({**shared, **added}.items(), key=lambda kv: _version_key(kv[0]), reverse=True)
    )


def _cluster_policy_spec(reference: Path, csv_name: str) -> dict:
    csv_path = reference / "csv" / f"{csv_name}.clusterserviceversion.yaml"
    csv = yaml.safe_load(csv_path.read_text())
    examples = json.loads(csv["metadata"]["annotations"]["alm-examples"])
    return next(e for e in examples if e["kind"] == "ClusterPolicy")["spec"]


def carried(reference: Path) -> dict[str, list[str]]:
    """The OpenShift minors whose certified catalog carries each CSV, from the catalog
    templates in reference/catalog-templates/v<minor>/<package>.yaml (any channel's entries)."""
    found: dict[str, set[str]] = {}
    for template in sorted((reference / "catalog-templates").glob("v*/*.yaml")):
        minor = template.parent.name.lstrip("v")
        for entry in yaml.safe_load(template.read_text())["entries"]:
            if entry.get("schema") == "olm.channel":
                for bundle in entry.get("entries") or []:
                    found.setdefault(bundle["name"], set()).add(minor)
    return {csv: sorted(minors, key=_version_key) for csv, minors in found.items()}


def catalog_minors(reference: Path) -> list[str]:
    """The OpenShift minors whose catalog templates were read."""
    minors = {p.name.lstrip("v") for p in (reference / "catalog-templates").glob("v*")}
    return sorted(minors, key=_version_key)


# The certified catalog's package of each operator whose upgrade graph the collection keeps.
PACKAGES = {"network_operator": "nvidia-network-operator", "gpu_operator": "gpu-operator-certified"}


def _line(csv_name: str) -> tuple[int, int]:
    major, minor = csv_name.split(".v", 1)[1].split(".")[:2]
    return (int(major), int(minor))


def _edge(entry: dict) -> dict:
    return {key: entry[key] for key in ("name", "replaces", "skips", "skipRange") if entry.get(key)}


def upgrade_graphs(reference: Path, olm_entries: dict, oldest: dict[str, tuple[int, int]]) -> dict:
    """Per operator, per OpenShift minor whose catalog template was read, per channel: its
    entries (name, replaces, skips, skipRange) from the operator's oldest release line the
    collection knows on, in the template's order, then those of olm_entries whose catalogs
    include the minor."""
    graphs: dict = {}
    for key, package in PACKAGES.items():
        added = olm_entries.get(package) or {}
        per_minor = {}
        templates = (reference / "catalog-templates").glob(f"v*/{package}.yaml")
        for template in sorted(templates, key=lambda t: _version_key(t.parent.name.lstrip("v"))):
            minor = template.parent.name.lstrip("v")
            channels: dict[str, list[dict]] = {}
            for item in yaml.safe_load(template.read_text())["entries"]:
                if item.get("schema") != "olm.channel" or item.get("package") != package:
                    continue
                kept = [
                    _edge(e) for e in item.get("entries") or [] if _line(e["name"]) >= oldest[key]
                ]
                if kept:
                    channels[item["name"]] = kept
            known = {e["name"] for entries in channels.values() for e in entries}
            for csv_name, data in added.items():
                if csv_name in known:
                    raise SystemExit(f"{ADDED}: olm_entries {csv_name} is in {template} already")
                if minor not in data["catalogs"]:
                    continue
                for channel, edge in data["channels"].items():
                    channels.setdefault(channel, []).append(_edge({"name": csv_name, **edge}))
            per_minor[minor] = dict(sorted(channels.items()))
        graphs[key] = per_minor
    return graphs


def catalog(shared: Path, added_path: Path = ADDED) -> dict:
    reference = shared / "reference"
    added = yaml.safe_load(added_path.read_text())
    network = _merged(
        yaml.safe_load((reference / "network-operator-releases.yaml").read_text()),
        added["network_operator"],
        "Network Operator release",
    )
    gpu = _merged(
        yaml.safe_load((reference / "gpu-operator-releases.yaml").read_text()),
        added["gpu_operator"],
        "GPU Operator release",
    )
    in_catalogs = carried(reference)
    # A release newer than the catalog templates says which catalogs carry it in its own data.
    network_releases = {
        release: {
            "csv_name": data["csv_name"],
            "channel": data["olm_channel"],
            "openshift_versions": data["openshift_versions"],
            "catalogs": data.get("catalogs") or in_catalogs.get(data["csv_name"], []),
            "components": {
                name: {
                    key: data["components"][name][key] for key in ("repository", "image", "version")
                }
                for name in COMPONENTS
            },
        }
        for release, data in network.items()
    }
    gpu_releases = {}
    for release, data in gpu.items():
        # A release without a CSV in ../shared takes the default ClusterPolicy of the one its
        # data names (cluster_policy_from).
        source = gpu[data["cluster_policy_from"]] if "cluster_policy_from" in data else data
        gpu_releases[release] = {
            "csv_name": data["csv_name"],
            "channel": data["olm_channel"],
            "openshift_versions": data["openshift_versions"],
            "catalogs": data.get("catalogs") or in_catalogs.get(data["csv_name"], []),
            "cluster_policy_spec": _cluster_policy_spec(reference, source["csv_name"]),
        }
    oldest = {
        "network_operator": min(_line(r["csv_name"]) for r in network_releases.values()),
        "gpu_operator": min(_line(r["csv_name"]) for r in gpu_releases.values()),
    }
    return {
        # The OpenShift minors whose certified catalog templates were read: what the "catalogs"
        # lists say of these minors holds for every release.
        "catalog_minors": catalog_minors(reference),
        "network_operator": network_releases,
        "gpu_operator": gpu_releases,
        # The certified catalog's channels per OpenShift minor, for upgrades.
        "upgrade_graphs": upgrade_graphs(reference, added.get("olm_entries") or {}, oldest),
    }


def render(data: dict) -> str:
    """JSON, not YAML: the collection reads this file in every run of every playbook, and
    Python's json module parses it in about 0.5 ms where PyYAML takes about 50 ms."""
    return json.dumps(data, indent=1) + "\n"


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--check", action="store_true")
    args = parser.parse_args()
    shared = Path(os.environ.get("GPUDIRECT_RDMA_SHARED", REPO_ROOT.parent / "shared"))
    data = catalog(shared)
    if args.check:
        if TARGET.read_text() != render(data):
            print(
                f"{TARGET} is stale: run python hack/generate_release_catalog.py", file=sys.stderr
            )
            return 1
        return 0
    TARGET.write_text(render(data))
    return 0


if __name__ == "__main__":
    sys.exit(main())
