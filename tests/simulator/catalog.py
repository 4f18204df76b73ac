"""The operator catalog the simulated OLM serves: the real CSVs in reference/csv/.

Each CSV file is one bundle. Its package and channels come from the bundle annotations beside
it (reference/bundle-metadata/<csv>.annotations.yaml) and, where the bundle annotations and the
catalog disagree (the SR-IOV operator's bundle says `alpha`, OpenShift's catalog says `stable`),
from the package file (<csv>.package.yaml).
"""

from __future__ import annotations

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


def _version_key(version: str) -> tuple:
    return tuple(int(part) if part.isdigit() else 0 for part in version.split("-")[0].split("."))


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


@functools.lru_cache(maxsize=4)
def load_catalog(reference: Path | None = None) -> Catalog:
    reference = reference or shared_dir() / "reference"
    bundles = []
    for csv_path in sorted((reference / "csv").glob("*.clusterserviceversion.yaml")):
        csv = yaml.safe_load(csv_path.read_text())
        name = csv["metadata"]["name"]
        annotations = yaml.safe_load(
            (reference / "bundle-metadata" / f"{name}.annotations.yaml").read_text()
        )["annotations"]
        package = annotations["operators.operatorframework.io.bundle.package.v1"]
        channels = annotations["operators.operatorframework.io.bundle.channels.v1"].split(",")
        default = annotations.get("operators.operatorframework.io.bundle.channel.default.v1")
        package_file = reference / "bundle-metadata" / f"{name}.package.yaml"
        if package_file.exists():
            package_data = yaml.safe_load(package_file.read_text())
            channels = [c["name"] for c in package_data["channels"]]
            default = package_data.get("defaultChannel") or channels[0]
        bundles.append(
            Bundle(
                package=package,
                csv_name=name,
                version=str(csv["spec"]["version"]),
                channels=tuple(c.strip() for c in channels),
                default_channel=(default or channels[0]).strip(),
                csv=csv,
            )
        )
    return Catalog(tuple(bundles))
