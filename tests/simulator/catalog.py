"""The operator catalog the simulated OLM serves: the real CSVs in reference/csv/, and the
releases the collection knows that ../shared has no bundle of.

Each CSV file is one bundle. Its package and channels come from the bundle annotations beside
it (reference/bundle-metadata/<csv>.annotations.yaml) and, where the bundle annotations and the
catalog disagree (the SR-IOV operator's bundle says `alpha`, OpenShift's catalog says `stable`),
from the package file (<csv>.package.yaml).

A release in the collection's release catalog (plugins/plugin_utils/releases.json) whose CSV is
not in reference/csv (Network Operator 26.7.0 and 26.7.1, GPU Operator 26.7.1 and 26.7.2), and
the rebuilt bundle nvidia-network-operator.v26.7.0-1 the certified catalog carries, are served
as a copy of the newest real bundle of the package (reference/pre-release/ included: the 26.7.0
rc.2 Network Operator bundle) under the release's CSV name, version and channels (`stable` and
the release's). Such a copy is the nearest real artifact, not the release's own CSV.

Channels and upgrade edges of the Network Operator and the GPU Operator are those of the
certified catalog of the cluster's OpenShift minor: its real template
(reference/catalog-templates/v<minor>/<package>.yaml: each channel's entries with `replaces`,
`skips`, `olm.skipRange`), with the entries newer than the templates from the release data's
olm_entries (hack/release-data.yaml, each with its source). A template entry of the collection's
release lines that has no bundle here (GPU Operator 26.3.0 to 26.3.2, ...) is served as a copy
too. For a minor without a template, and for the other packages, the bundles' own channels
hold, each channel's newest bundle its head.
"""

from __future__ import annotations

import copy
import functools
import json
from dataclasses import dataclass, field
from pathlib import Path

from tests.harness import yaml_files
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
REPO = Path(__file__).resolve().parents[2]
RELEASE_CATALOG = REPO / "plugins" / "plugin_utils" / "releases.json"
RELEASE_DATA = REPO / "hack" / "release-data.yaml"
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


def _olm_semver(version: str) -> tuple:
    """Versions as OLM compares them (blang/semver): a pre-release sorts below its release."""
    core, _dash, pre = version.lstrip("v").partition("-")
    numbers = tuple(int(n) for n in core.split("."))
    if not pre:
        return (*numbers, 1, ())
    return (
        *numbers,
        0,
        tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in pre.split(".")),
    )


def _in_skip_range(version: str, skip_range: str) -> bool:
    """An olm.skipRange: comparators joined by spaces, all of which must hold (no || here)."""
    key = _olm_semver(version)
    checks = {
        ">=": lambda bound: key >= bound,
        "<=": lambda bound: key <= bound,
        ">": lambda bound: key > bound,
        "<": lambda bound: key < bound,
    }
    for comparator in skip_range.split():
        operator = next((o for o in (">=", "<=", ">", "<") if comparator.startswith(o)), None)
        if operator is None:
            if _olm_semver(comparator) != key:
                return False
        elif not checks[operator](_olm_semver(comparator[len(operator) :])):
            return False
    return True


def _csv_version(csv_name: str) -> str:
    return csv_name.split(".v", 1)[1]


@dataclass(frozen=True)
class Catalog:
    bundles: tuple[Bundle, ...]
    # By OpenShift minor, package and channel: the entries ({name, replaces, skips, skipRange})
    # in the catalog's order.
    graphs: dict = field(default_factory=dict, compare=False)

    def packages(self) -> set[str]:
        return {b.package for b in self.bundles}

    def bundle(self, csv_name: str) -> Bundle | None:
        return next((b for b in self.bundles if b.csv_name == csv_name), None)

    def channels(self, package: str, minor: str | None) -> dict[str, list[dict]] | None:
        """The package's channels in that minor's catalog; None when no template says."""
        return (self.graphs.get(minor) or {}).get(package)

    def _channel_order(self, entries: list[dict]) -> list[dict]:
        """OLM's channel order: from the head (no entry replaces or skips it; the newest of
        several) along `replaces`; entries off that chain after it."""
        by_name = {e["name"]: e for e in entries}
        replaced = {e.get("replaces") for e in entries}
        replaced |= {s for e in entries for s in e.get("skips") or []}
        heads = [e for e in entries if e["name"] not in replaced]
        heads.sort(key=lambda e: _olm_semver(_csv_version(e["name"])), reverse=True)
        ordered: list[dict] = []
        for entry in heads:
            while entry is not None and entry not in ordered:
                ordered.append(entry)
                entry = by_name.get(entry.get("replaces"))
        return ordered + [e for e in entries if e not in ordered]

    def resolve(
        self, package: str, channel: str | None, starting_csv: str | None, minor: str | None = None
    ) -> Bundle | None:
        """The bundle OLM would install: startingCSV when given, else the channel's head (the
        package's default channel when none is given)."""
        candidates = [b for b in self.bundles if b.package == package]
        if not candidates:
            return None
        channel = channel or max(candidates, key=lambda b: _version_key(b.version)).default_channel
        channels = self.channels(package, minor)
        if channels is not None:
            entries = self._channel_order(channels.get(channel) or [])
            names = [e["name"] for e in entries]
            if starting_csv:
                name = starting_csv if starting_csv in names else None
            else:
                name = names[0] if names else None
            return self.bundle(name) if name else None
        in_channel = [b for b in candidates if channel in b.channels]
        if starting_csv:
            in_channel = [b for b in in_channel if b.csv_name == starting_csv]
        if not in_channel:
            return None
        return max(in_channel, key=lambda b: _version_key(b.version))

    def successor(
        self, package: str, channel: str | None, installed: str, minor: str | None
    ) -> Bundle | None:
        """What OLM installs next for the installed CSV on this channel: the first entry in
        channel order that replaces it, skips it, or whose skipRange holds its version; None
        when none does (OLM then stays, without an error)."""
        channels = self.channels(package, minor)
        if channels is None or not channel:
            return None
        version = _csv_version(installed)
        for entry in self._channel_order(channels.get(channel) or []):
            if (
                entry.get("replaces") == installed
                or installed in (entry.get("skips") or [])
                or (entry.get("skipRange") and _in_skip_range(version, entry["skipRange"]))
            ):
                return self.bundle(entry["name"])
        return None


def _bundle(csv: dict, annotations_folder: Path, reference: Path) -> Bundle:
    name = csv["metadata"]["name"]
    annotations = yaml_files.load((annotations_folder / f"{name}.annotations.yaml").read_text())[
        "annotations"
    ]
    package = annotations["operators.operatorframework.io.bundle.package.v1"]
    channels = annotations["operators.operatorframework.io.bundle.channels.v1"].split(",")
    default = annotations.get("operators.operatorframework.io.bundle.channel.default.v1")
    package_file = reference / "bundle-metadata" / f"{name}.package.yaml"
    if package_file.exists():
        package_data = yaml_files.load(package_file.read_text())
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
    releases = json.loads(RELEASE_CATALOG.read_text())
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


def _graphs(reference: Path) -> dict:
    """By minor, package and channel: the template's entries, then the release data's newer
    ones for the catalogs that carry them."""
    added = yaml_files.load(RELEASE_DATA.read_text()).get("olm_entries") or {}
    graphs: dict = {}
    for template in sorted((reference / "catalog-templates").glob("v*/*.yaml")):
        minor, package = template.parent.name[1:], template.stem
        channels: dict[str, list[dict]] = {}
        for item in yaml_files.load(template.read_text())["entries"]:
            if item.get("schema") == "olm.channel" and item.get("package") == package:
                channels[item["name"]] = list(item.get("entries") or [])
        for csv_name, data in (added.get(package) or {}).items():
            if minor in data["catalogs"]:
                for channel, edge in data["channels"].items():
                    channels.setdefault(channel, []).append({"name": csv_name, **edge})
        graphs.setdefault(minor, {})[package] = channels
    return graphs


def _nearest(bundles: list[Bundle], version: str) -> Bundle:
    """The bundle to copy for a version: one of its release line, else the newest older one,
    else the oldest."""
    key = _olm_semver(version)
    line = [b for b in bundles if _olm_semver(b.version)[:2] == key[:2]]
    older = [b for b in bundles if _olm_semver(b.version) < key]
    if line or older:
        return max(line or older, key=lambda b: _olm_semver(b.version))
    return min(bundles, key=lambda b: _olm_semver(b.version))


def _graph_copies(bundles: list[Bundle], graphs: dict) -> list[Bundle]:
    """Copies for the entries of the graphs that no bundle has, from each package's oldest
    bundle's release line on (older entries are never reached from what tests install)."""
    known = {b.csv_name for b in bundles}
    copies: dict[str, Bundle] = {}
    for packages in graphs.values():
        for package, channels in packages.items():
            own = [b for b in bundles if b.package == package]
            oldest = min(_olm_semver(b.version)[:2] for b in own)
            for entries in channels.values():
                for entry in entries:
                    name = entry["name"]
                    version = _csv_version(name)
                    if name in known or name in copies or _olm_semver(version)[:2] < oldest:
                        continue
                    base = _nearest(own, version)
                    copies[name] = _copy(
                        base, name, version, f"v{'.'.join(version.split('.')[:2])}"
                    )
    return list(copies.values())


@functools.lru_cache(maxsize=4)
def load_catalog(reference: Path | None = None) -> Catalog:
    reference = reference or shared_dir() / "reference"
    real = [
        _bundle(yaml_files.load(path.read_text()), reference / "bundle-metadata", reference)
        for path in sorted((reference / "csv").glob("*.clusterserviceversion.yaml"))
    ]
    pre_releases = [
        _bundle(yaml_files.load(path.read_text()), reference / "pre-release", reference)
        for path in sorted((reference / "pre-release").glob("*.clusterserviceversion.yaml"))
    ]
    bundles = real + _not_in_shared(real, pre_releases)
    graphs = _graphs(reference)
    return Catalog(tuple(bundles + _graph_copies(bundles, graphs)), graphs)
