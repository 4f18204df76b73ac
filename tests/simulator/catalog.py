"""The operator catalog the simulated OLM serves: the real CSVs in reference/csv/, and the
releases the collection knows that ../shared has no bundle of.

Each CSV file is one bundle. Its package and channels come from the bundle annotations beside
it (reference/bundle-metadata/<csv>.annotations.yaml) and, where the bundle annotations and the
catalog disagree (the SR-IOV operator's bundle says `alpha`, OpenShift's catalog says `stable`),
from the package file (<csv>.package.yaml).

A release in the collection's release catalog (plugins/plugin_utils/releases.yml) whose CSV is
not in reference/csv (Network Operator 26.7.0 and 26.7.1, GPU Operator 26.7.1 and 26.7.2), and
the rebuilt bundle nvidia-network-operator.v26.7.0-1 the certified catalog carries, are served
as a copy of the newest real bundle of the package (reference/pre-release/ included: the 26.7.0
rc.2 Network Operator bundle) under the release's CSV name, version and channels (`stable` and
the release's). Such a copy is the nearest real artifact, not the release's own CSV.
"""

from __future__ import annotations

import copy
import functools
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from tests.harness.controlplane import shared_dir

# Which of the two OpenShift catalogs ships which package.
CATALOG_PACKAGES = {
    "redhat-operators": {"nfd", "sriov-network-operator"},
    "certified-operators": {
        "nvidia-network-operator",
        "gpu-operator-certified",
        "nvidia-maintenance-operator",
    },
}
MARKETPLACE_NAMESPACE = "openshift-marketplace"


# Bundles the certified catalog carries beyond the releases: a rebuilt bundle (the same release,
# a new DOCA Telemetry Service image), by CSV name: (package, version, channel).
REBUILDS = {
    "nvidia-network-operator.v26.7.0-1": ("nvidia-network-operator", "26.7.0-1", "v26.7"),
}
RELEASE_CATALOG = Path(__file__).resolve().parents[2] / "plugins" / "plugin_utils" / "releases.yml"
RELEASE_PACKAGES = {
    "network_operator": "nvidia-network-operator",
    "gpu_operator": "gpu-operator-certified",
}


def _version_key(version: str) -> tuple:
    """26.7.0 < 26.7.0-1 (a rebuild) < 26.7.1; a pre-release (26.7.0-rc.2) sorts as its release."""
    release, _dash, suffix = version.partition("-")
    numbers = tuple(int(part) if part.isdigit() else 0 for part in release.split("."))
    return (*numbers, int(suffix) if suffix.isdigit() else 0)


@dataclass(frozen=True)
class Bundle:
    package: str
    csv_name: str
    version: str
    channels: tuple[str, ...]
    default_channel: str
    csv: dict = field(compare=False, repr=False)

    @property
    def install_modes(self) -> dict[str, bool]:
        return {m["type"]: m["supported"] for m in self.csv["spec"].get("installModes", [])}


@dataclass(frozen=True)
class Catalog:
    bundles: tuple[Bundle, ...]

    def packages(self) -> set[str]:
        return {b.package for b in self.bundles}

    def resolve(self, package: str, channel: str | None, starting_csv: str | None) -> Bundle | None:
        """The bundle OLM would install: startingCSV when given, else the newest in channel
        (the package's default channel when none is given)."""
        candidates = [b for b in self.bundles if b.package == package]
        if not candidates:
            return None
        channel = channel or max(candidates, key=lambda b: _version_key(b.version)).default_channel
        in_channel = [b for b in candidates if channel in b.channels]
        if starting_csv:
            in_channel = [b for b in in_channel if b.csv_name == starting_csv]
        if not in_channel:
            return None
        return max(in_channel, key=lambda b: _version_key(b.version))


def _bundle(csv: dict, annotations_folder: Path, reference: Path) -> Bundle:
    name = csv["metadata"]["name"]
    annotations = yaml.safe_load((annotations_folder / f"{name}.annotations.yaml").read_text())[
        "annotations"
    ]
    package = annotations["operators.operatorframework.io.bundle.package.v1"]
    channels = annotations["operators.operatorframework.io.bundle.channels.v1"].split(",")
    default = annotations.get("operators.operatorframework.io.bundle.channel.default.v1")
    package_file = reference / "bundle-metadata" / f"{name}.package.yaml"
    if package_file.exists():
        package_data = yaml.safe_load(package_file.read_text())
        channels = [c["name"] for c in package_data["channels"]]
        default = package_data.get("defaultChannel") or channels[0]
    return Bundle(
        package=package,
        csv_name=name,
        version=str(csv["spec"]["version"]),
        channels=tuple(c.strip() for c in channels),
        default_channel=(default or channels[0]).strip(),
        csv=csv,
    )


def _copy(base: Bundle, csv_name: str, version: str, channel: str) -> Bundle:
    csv = copy.deepcopy(base.csv)
    csv["metadata"]["name"] = csv_name
    csv["spec"]["version"] = version
    csv["spec"].pop("replaces", None)
    return Bundle(
        package=base.package,
        csv_name=csv_name,
        version=version,
        channels=("stable", channel),
        default_channel=base.default_channel,
        csv=csv,
    )


def _not_in_shared(real: list[Bundle], pre_releases: list[Bundle]) -> list[Bundle]:
    """The collection's releases and REBUILDS without a bundle in ../shared, as copies."""
    releases = yaml.safe_load(RELEASE_CATALOG.read_text())
    wanted = dict(REBUILDS)
    for key, package in RELEASE_PACKAGES.items():
        for release, data in releases[key].items():
            wanted.setdefault(data["csv_name"], (package, release, data["channel"]))
    known = {b.csv_name for b in real}
    copies = []
    for csv_name, (package, version, channel) in wanted.items():
        if csv_name in known:
            continue
        base = max(
            (b for b in real + pre_releases if b.package == package),
            key=lambda b: _version_key(b.version),
        )
        copies.append(_copy(base, csv_name, version, channel))
    return copies


@functools.lru_cache(maxsize=4)
def load_catalog(reference: Path | None = None) -> Catalog:
    reference = reference or shared_dir() / "reference"
    real = [
        _bundle(yaml.safe_load(path.read_text()), reference / "bundle-metadata", reference)
        for path in sorted((reference / "csv").glob("*.clusterserviceversion.yaml"))
    ]
    pre_releases = [
        _bundle(yaml.safe_load(path.read_text()), reference / "pre-release", reference)
        for path in sorted((reference / "pre-release").glob("*.clusterserviceversion.yaml"))
    ]
    return Catalog(tuple(real + _not_in_shared(real, pre_releases)))
