"""An operator package's OLM upgrade graph, and the way through it (pure: catalog data in, hops
out; no I/O).

OLM (v0) resolves the next CSV of an installed one in the Subscription's channel only: the
channel's entries that replace it, list it in `skips`, or whose `olm.skipRange` holds its
version, taken channel head first, so a head whose skipRange covers the installed version wins
in one step; no such entry means nothing happens, without an error (operator-lifecycle-manager
resolver.go and cache/predicates.go; ../shared/reference/UPGRADES.md section 1). It cannot go
down a version. NVIDIA supports an upgrade within a release line (YY.MM) or to the next one
(GPU Operator life-cycle policy; Network Operator life-cycle management), so a longer way is
walked one line at a time, each step in a channel whose resolution lands there.

upgrade_path() finds the fewest such steps from what is installed to the target, each a channel
and the CSV OLM resolves there, or says why there is none (UpgradeRefused, naming the installed
version, the target, the channels and what the user can do).
"""

from __future__ import annotations

import re
from collections import deque
from dataclasses import dataclass, field

_VERSION = re.compile(r"^(\d+)\.(\d+)\.(\d+)(?:-([0-9A-Za-z.-]+))?(?:\+[0-9A-Za-z.-]+)?$")
_COMPARATOR = re.compile(r"^(>=|<=|!=|==|=|>|<)?\s*v?(\S+)$")


class UpgradeRefused(Exception):
    """No way through the graph, or one the operator's vendor does not support."""


class Downgrade(UpgradeRefused):
    """The target is older than what runs: OLM never installs an older version."""


def semver(version: str) -> tuple:
    """A sort key of a semantic version as OLM compares them (blang/semver): a pre-release
    (26.7.0-1, 26.7.0-rc.2) sorts below its release; ValueError for anything else."""
    found = _VERSION.match(str(version).strip().lstrip("v"))
    if not found:
        raise ValueError(f"version: expected a semantic version such as 26.7.0; got {version!r}")
    major, minor, patch, pre = found.groups()
    if pre is None:
        return (int(major), int(minor), int(patch), 1, ())
    parts = tuple((0, int(p), "") if p.isdigit() else (1, 0, p) for p in pre.split("."))
    return (int(major), int(minor), int(patch), 0, parts)


def in_range(version: str, spec: str) -> bool:
    """Whether version is in an olm.skipRange such as `>=1.9.0 <26.3.3` (comparators joined by
    spaces must all hold; alternatives are joined by ||)."""
    key = semver(version)
    for alternative in spec.split("||"):
        comparators = alternative.split()
        if comparators and all(_holds(key, c) for c in _joined(comparators)):
            return True
    return False


def _joined(tokens: list[str]) -> list[str]:
    """`>= 1.9.0` written with a space is one comparator."""
    joined: list[str] = []
    for token in tokens:
        if joined and joined[-1] in (">=", "<=", "!=", "==", "=", ">", "<"):
            joined[-1] += token
        else:
            joined.append(token)
    return joined


def _holds(key: tuple, comparator: str) -> bool:
    found = _COMPARATOR.match(comparator)
    if not found:
        raise ValueError(f"skipRange: expected comparators such as >=1.9.0; got {comparator!r}")
    operator, bound = found.group(1) or "=", semver(found.group(2))
    return {
        ">=": key >= bound,
        "<=": key <= bound,
        ">": key > bound,
        "<": key < bound,
        "!=": key != bound,
        "=": key == bound,
        "==": key == bound,
    }[operator]


def version_of(csv_name: str) -> str:
    """The version in a CSV name as NVIDIA names them (gpu-operator-certified.v26.3.3)."""
    if ".v" not in csv_name:
        raise ValueError(f"CSV name: expected <package>.v<version>; got {csv_name!r}")
    return csv_name.split(".v", 1)[1]


def release_line(version: str) -> tuple[int, int]:
    """26.3.3 -> (26, 3): the YY.MM line a release belongs to."""
    key = semver(version)
    return (key[0], key[1])


@dataclass(frozen=True)
class Entry:
    """One CSV of a channel: what it replaces, skips, and the skipRange it declares."""

    name: str
    version: str
    replaces: str | None = None
    skips: tuple[str, ...] = ()
    skip_range: str | None = None

    def upgrades(self, installed: str, installed_version: str) -> bool:
        return (
            self.replaces == installed
            or installed in self.skips
            or bool(self.skip_range and in_range(installed_version, self.skip_range))
        )


@dataclass(frozen=True)
class Channel:
    name: str
    entries: tuple[Entry, ...] = field(default=())

    def head_first(self) -> list[Entry]:
        """The entries in OLM's order: the head (no entry of the channel replaces or skips it),
        then what it replaces, and so on; entries off that chain after, newest first."""
        names = {e.name: e for e in self.entries}
        replaced = {e.replaces for e in self.entries} | {s for e in self.entries for s in e.skips}
        heads = sorted(
            (e for e in self.entries if e.name not in replaced),
            key=lambda e: semver(e.version),
            reverse=True,
        )
        order: list[Entry] = []
        for head in heads:
            entry = head
            while entry is not None and entry not in order:
                order.append(entry)
                entry = names.get(entry.replaces) if entry.replaces else None
        rest = sorted(
            (e for e in self.entries if e not in order),
            key=lambda e: semver(e.version),
            reverse=True,
        )
        return order + rest

    def head(self) -> Entry | None:
        ordered = self.head_first()
        return ordered[0] if ordered else None

    def successor(self, installed: str, installed_version: str) -> Entry | None:
        """The CSV OLM resolves next in this channel for the installed one (None: it stays)."""
        return next(
            (e for e in self.head_first() if e.upgrades(installed, installed_version)), None
        )


def channels_from_entries(channels: dict[str, list[dict]]) -> dict[str, Channel]:
    """Channels from their entries as OLM's catalog formats write them ({name, replaces, skips,
    skipRange}; the release catalog's upgrade_graphs keep them so)."""
    return {
        name: Channel(
            name,
            tuple(
                Entry(
                    name=e["name"],
                    version=version_of(e["name"]),
                    replaces=e.get("replaces"),
                    skips=tuple(e.get("skips") or ()),
                    skip_range=e.get("skipRange"),
                )
                for e in entries or []
            ),
        )
        for name, entries in channels.items()
    }


def channels_from_template(template: dict, package: str) -> dict[str, Channel]:
    """The channels of package in an OLM catalog template (schema olm.template.basic, as the
    certified catalog keeps them per OpenShift minor): entries in the template's order."""
    return channels_from_entries(
        {
            item["name"]: item.get("entries") or []
            for item in template.get("entries") or []
            if item.get("schema") == "olm.channel" and item.get("package") == package
        }
    )


@dataclass(frozen=True)
class Hop:
    """One InstallPlan of the way: the channel the Subscription is on and the CSV OLM installs."""

    channel: str
    csv: str
    version: str
    replaces: str


def _lines(channels: dict[str, Channel]) -> list[tuple[int, int]]:
    return sorted({release_line(e.version) for c in channels.values() for e in c.entries})


def refuse_downgrade(installed: str, target: str) -> None:
    """Downgrade when the target is an older version than what runs (a CSV the graph does not
    reach: a rebuilt bundle, 26.7.0-1, is reached from 26.7.0 by its replaces edge though semver
    puts it lower)."""
    if semver(version_of(target)) < semver(version_of(installed)):
        raise Downgrade(
            f"installed {installed}, target {target}: that is a downgrade, which OLM cannot do "
            "(it never installs an older version). To go back: uninstall the operator "
            "(playbooks/uninstall.yml) and install it again at the older release (startingCSV "
            f"{target})"
        )


def upgrade_path(
    channels: dict[str, Channel], installed: str, target: str, target_channel: str
) -> list[Hop]:
    """The fewest InstallPlans from the installed CSV to the target, each landing within the
    release line it starts from or the next one and never past the target; of equal ways, the
    one on the target channel (where the Subscription stays afterwards). [] when the target is
    installed. UpgradeRefused says why there is no such way."""
    installed_version, target_version = version_of(installed), version_of(target)
    where = f"installed {installed}, target {target}"
    if target_channel not in channels:
        raise UpgradeRefused(
            f"{where}: channel {target_channel} is not in the catalog; its channels: "
            f"{', '.join(sorted(channels))}"
        )
    if installed == target:
        return []
    lines = _lines(channels)
    if release_line(installed_version) not in lines:
        lines = sorted({*lines, release_line(installed_version)})
    # Breadth first over installed CSVs: each channel's resolution is one edge.
    reached: dict[str, list[Hop]] = {installed: []}
    queue = deque([installed])
    while queue:
        current = queue.popleft()
        current_version = version_of(current)
        line = lines.index(release_line(current_version))
        allowed = lines[: line + 2]
        for name in sorted(channels, key=lambda n: (n != target_channel, n)):
            hop = channels[name].successor(current, current_version)
            if hop is None or hop.name in reached:
                continue
            if release_line(hop.version) not in allowed:
                continue
            if semver(hop.version) > semver(target_version):
                continue
            reached[hop.name] = [*reached[current], Hop(name, hop.name, hop.version, current)]
            queue.append(hop.name)
    if target not in reached:
        refuse_downgrade(installed, target)
        raise UpgradeRefused(_unreachable(channels, installed, target, target_channel, lines))
    return reached[target]


def _unreachable(
    channels: dict[str, Channel],
    installed: str,
    target: str,
    target_channel: str,
    lines: list[tuple[int, int]],
) -> str:
    holding = sorted(n for n, c in channels.items() if target in {e.name for e in c.entries})
    heads = {n: c.successor(installed, version_of(installed)) for n, c in sorted(channels.items())}
    moves = (
        ", ".join(f"{n} -> {hop.name}" for n, hop in heads.items() if hop is not None)
        or "none (no channel has a successor of the installed CSV)"
    )
    if not holding:
        return (
            f"installed {installed}, target {target}: no channel of the catalog holds {target}; "
            f"the channels: {', '.join(sorted(channels))}. Choose a release the cluster's "
            "catalog carries"
        )
    return (
        f"installed {installed}, target {target}: no way through the catalog's channels that "
        "moves at most one release line per step and never past the target (target channel "
        f"{target_channel}; channels holding the target: {', '.join(holding)}). What OLM would "
        f"install next from {installed}, per channel: {moves}. Choose a target one of those "
        "reaches, or upgrade to an intermediate release first"
    )
