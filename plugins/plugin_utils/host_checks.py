"""The verification's host checks: the read-only facts a test pod prints before its traffic
(verify_test.sh's "fact" lines) judged into findings, each saying what to change and where to
read about it (pure: log text and plan in, findings out).

Checks, per tested node (each finding names the node and, where it is a rail's, the rail):
- acs: Access Control Services redirecting requests (ReqRedir+ or CmpltRedir+ in ACSCtl) on a
  PCIe bridge between a rail's GPU and NIC sends every GPUDirect transfer up to the root
  complex: failure. Unknown (no lspci, or not allowed to read the capability): warning.
- iommu: an IOMMU that translates DMA also turns ACS on and costs GPUDirect bandwidth: warning.
  Read from what the kernel reports, first the domain type of the IOMMU group of each rail's
  NIC and of each GPU the pod holds (identity passes; DMA or DMA-FQ translates), then, where no
  device is in an IOMMU group, the boot log's `iommu: Default domain type:` line, then the
  kernel command line (iommu=pt, intel_iommu=on, amd_iommu=on, ...); unknown when none says.
- gpu-driver: DMA-BUF needs the GPU's open kernel modules: failure with the proprietary ones
  when the plan registers GPU memory by DMA-BUF.
- peermem: the peermem mode needs nvidia_peermem loaded: failure when it is absent.
- rdma-isolation: a container that asked for a GPU and no RDMA resource (the test pods' init
  container) finds a NIC's devices in /dev/infiniband (uverbsN, the verbs of one RDMA device;
  umadN and issmN, its management datagrams): the GPU stack puts every NIC into every GPU pod
  (GPU Operator 26.3.0 to 26.3.2, gpu-operator #2525). Failure where a group's devices are each
  one pod's (host device, SR-IOV legacy), warning with the shared device plugin. rdma_cm alone
  (the RDMA connection manager's one device for the whole node) reaches no NIC without a uverbs
  device: ok, naming it.
- link: a rail's port not ACTIVE: failure.
- mtu: a rail's interface MTU below the plan's gpudirect_rdma_mtu: warning (shared device and
  SR-IOV, where the collection sets that MTU on the MacvlanNetwork or the VFs; with host device
  and IPoIB the interface has the PF's MTU, which is reported, not judged).
"""

from __future__ import annotations

import re

_FACT = re.compile(r"^gpudirect-rdma-verify: fact (?P<key>\S+) ?(?P<value>.*)$", re.MULTILINE)
NCCL_TROUBLESHOOTING = (
    "https://docs.nvidia.com/deeplearning/nccl/user-guide/docs/troubleshooting.html"
)
ACS_REFERENCE = f"{NCCL_TROUBLESHOOTING}#pci-access-control-services-acs"
GPU_OPERATOR_RDMA = (
    "https://docs.nvidia.com/datacenter/cloud-native/gpu-operator/latest/gpu-operator-rdma.html"
)
LOCAL_DOC = "docs/troubleshooting.md"
_REDIRECT = re.compile(r"\b(ReqRedir|CmpltRedir)\+")
# The /dev/infiniband entries that belong to one RDMA device (a NIC's port): its verbs (uverbsN),
# management datagrams (umadN) and subnet manager interface (issmN).
_NIC_DEVICE = re.compile(r"^(uverbs|umad|issm)\d+$")


def facts(log: str) -> dict[str, list[str]]:
    """The pod's facts by key, in the order printed (a key such as rail0-acs may repeat)."""
    found: dict[str, list[str]] = {}
    for match in _FACT.finditer(log):
        found.setdefault(match["key"], []).append(match["value"].strip())
    return found


_BOOT_DOMAIN = re.compile(r"iommu: Default domain type: (?P<type>\S+)")
_DRIVER = re.compile(r"^NVRM version: NVIDIA UNIX (?P<open>Open Kernel Module for )?\S+")
_ARGUMENT = re.compile(r"^[A-Za-z0-9_.-]+(=\S*)?$")


def boot_iommu_domain(text: str) -> str | None:
    """The kernel's default IOMMU domain type from its boot log (`iommu: Default domain type:
    Translated`): Translated or Passthrough (with what follows, such as `(set via kernel
    command line)`); None when the text has no such line."""
    found = _BOOT_DOMAIN.search(text or "")
    return text[found.start("type") :].splitlines()[0].strip() if found else None


def driver_flavour(text: str) -> str | None:
    """open or proprietary, from the first line of /proc/driver/nvidia/version (`NVRM version:
    NVIDIA UNIX Open Kernel Module for x86_64 ...` is open); None when it is not that line."""
    found = _DRIVER.match((text or "").splitlines()[0] if text else "")
    if not found:
        return None
    return "open" if found["open"] else "proprietary"


def kernel_arguments(text: str) -> list[str] | None:
    """The kernel's arguments of a command line (/proc/cmdline: one line of name[=value], then
    perhaps -- and the init program's); None when the text is not one."""
    lines = (text or "").strip().splitlines()
    if len(lines) != 1:
        return None
    # What follows a lone -- is the init program's, not the kernel's.
    arguments = lines[0].split(" -- ", 1)[0].split()
    return arguments if all(_ARGUMENT.match(a) for a in arguments) else None


def _finding(node, check, status, detail, fix="", reference="", rail=None) -> dict:
    return {
        "node": node,
        "check": check,
        **({"rail": rail} if rail is not None else {}),
        "status": status,
        "detail": detail,
        "fix": fix,
        "reference": reference,
    }


_TRANSLATING_DOMAINS = ("DMA", "DMA-FQ")
_IOMMU_FIX = (
    "add the kernel argument iommu=pt (passthrough) in a MachineConfig for the GPU nodes' pool "
    "(or turn the IOMMU off in the BIOS)"
)


def iommu_from_arguments(arguments: list[str]) -> tuple[str, str] | None:
    """(status, detail) from the kernel command line; None when it names no IOMMU mode."""
    if "iommu=pt" in arguments or "iommu.passthrough=1" in arguments:
        return "ok", "passthrough on the kernel command line (" + " ".join(
            a for a in arguments if "iommu" in a
        ) + ")"
    translating = [a for a in arguments if a in ("intel_iommu=on", "amd_iommu=on")]
    if translating or "iommu.passthrough=0" in arguments:
        shown = (translating or ["iommu.passthrough=0"])[0]
        return "warning", (
            f"{shown} without iommu=pt on the kernel command line: the IOMMU translates every "
            "DMA and the kernel turns ACS on"
        )
    off = [a for a in arguments if a in ("intel_iommu=off", "amd_iommu=off", "iommu=off")]
    if off:
        return "ok", f"the IOMMU is off on the kernel command line ({off[0]})"
    return None


def _iommu(node: str, found: dict) -> dict:
    """The iommu check, from the kernel's own state first (see the module's docstring)."""
    groups = [value.split() for value in found.get("iommu-group", [])]
    groups = [g for g in groups if len(g) == 3]
    translated = [
        f"{what} {address} ({kind})"
        for what, address, kind in groups
        if kind in _TRANSLATING_DOMAINS
    ]
    passing = [f"{what} {address}" for what, address, kind in groups if kind == "identity"]
    if translated:
        return _finding(
            node,
            "iommu",
            "warning",
            "the IOMMU translates DMA for " + ", ".join(translated) + " (the domain type of "
            "their IOMMU groups): every GPUDirect transfer is translated and the kernel turns "
            "ACS on",
            _IOMMU_FIX,
            ACS_REFERENCE,
        )
    if passing:
        return _finding(
            node, "iommu", "ok", "identity (passthrough) IOMMU domain for " + ", ".join(passing)
        )
    default = boot_iommu_domain((found.get("iommu-boot") or [""])[0]) or "unknown"
    if default.startswith("Translated"):
        return _finding(
            node,
            "iommu",
            "warning",
            f"the boot log says 'iommu: Default domain type: {default}' and no device of the "
            "rails is in an IOMMU group the pod can see: DMA is likely translated",
            _IOMMU_FIX,
            ACS_REFERENCE,
        )
    if default.startswith("Passthrough"):
        return _finding(node, "iommu", "ok", f"the boot log says 'Default domain type: {default}'")
    cmdline = (found.get("cmdline") or ["unknown"])[0]
    arguments = None if cmdline == "unknown" else kernel_arguments(cmdline)
    judged = iommu_from_arguments(arguments) if arguments is not None else None
    if judged:
        status, detail = judged
        return _finding(
            node,
            "iommu",
            status,
            detail,
            _IOMMU_FIX if status != "ok" else "",
            ACS_REFERENCE if status != "ok" else "",
        )
    return _finding(
        node,
        "iommu",
        "unknown",
        "whether the IOMMU translates DMA is unknown: no device of the rails is in an IOMMU "
        "group the pod can see, the boot log is not readable in the pod"
        + (
            ", and the pod could not read /proc/cmdline"
            if cmdline == "unknown"
            else ", and the kernel command line names no IOMMU mode"
        ),
        "read /sys/kernel/iommu_groups/*/type on the node (oc debug node/<node>): identity is "
        "passthrough, DMA or DMA-FQ translates",
        ACS_REFERENCE,
    )


def _isolation(node: str, found: dict, method: str) -> list[dict]:
    """The rdma-isolation check (see the module's docstring); nothing where the pod had no
    init container to look (ROLE=facts)."""
    if "rdma-isolation" not in found:
        return []
    seen = found["rdma-isolation"][0]
    if seen == "none":
        return [
            _finding(
                node,
                "rdma-isolation",
                "ok",
                "a container with a GPU and no RDMA resource has no /dev/infiniband",
            )
        ]
    if seen == "unknown":
        return [
            _finding(
                node,
                "rdma-isolation",
                "unknown",
                "the test container could not read what the init container found in "
                "/dev/infiniband",
            )
        ]
    if not any(_NIC_DEVICE.match(name) for name in seen.split()):
        return [
            _finding(
                node,
                "rdma-isolation",
                "ok",
                f"a container with a GPU and no RDMA resource sees /dev/infiniband ({seen}) but "
                "no NIC's device (uverbs, umad, issm)",
            )
        ]
    exclusive = method != "shared_device"
    return [
        _finding(
            node,
            "rdma-isolation",
            "failure" if exclusive else "warning",
            f"a container with a GPU and no RDMA resource sees /dev/infiniband ({seen}): every "
            "GPU pod reaches the node's NICs without asking for them"
            + (
                f", and with {method} each of those devices belongs to one pod" if exclusive else ""
            ),
            "GPU Operator 26.3.0 to 26.3.2 do this (MOFED_ENABLED and GDS_ENABLED on by "
            "default, gpu-operator #2525): upgrade to 26.3.3 or later "
            "(gpudirect_rdma_gpu_operator_release); otherwise look for a container runtime hook "
            "or a device plugin that mounts /dev/infiniband into every container",
            LOCAL_DOC,
        )
    ]


def _node_checks(node: str, found: dict, plan: dict) -> list[dict]:
    results = []
    results.append(_iommu(node, found))
    results += _isolation(node, found, plan["method"])
    driver = (found.get("gpu-driver") or ["unknown"])[0]
    memory = plan["gpu"]["memory"]
    if driver == "unknown" or driver_flavour(driver) is None:
        results.append(
            _finding(
                node,
                "gpu-driver",
                "unknown",
                "the pod could not read the GPU driver's version"
                + ("" if driver == "unknown" else f" (it read {driver!r})"),
            )
        )
    elif driver_flavour(driver) == "open":
        results.append(_finding(node, "gpu-driver", "ok", "open kernel modules: " + driver))
    elif memory == "dmabuf":
        results.append(
            _finding(
                node,
                "gpu-driver",
                "failure",
                "proprietary kernel modules: DMA-BUF registration of GPU memory needs the open "
                "ones (" + driver + ")",
                "set the ClusterPolicy's driver.kernelModuleType: open (the gpu_operator role "
                "does with gpudirect_rdma_gpu_memory: dmabuf); or choose peermem",
                GPU_OPERATOR_RDMA,
            )
        )
    else:
        results.append(_finding(node, "gpu-driver", "ok", "proprietary kernel modules: " + driver))
    if memory == "peermem":
        loaded = (found.get("peermem") or ["absent"])[0] == "loaded"
        results.append(
            _finding(node, "peermem", "ok", "nvidia_peermem is loaded")
            if loaded
            else _finding(
                node,
                "peermem",
                "failure",
                "nvidia_peermem is not loaded: RDMA cannot register GPU memory in peermem mode",
                "set the ClusterPolicy's driver.rdma.enabled: true (the gpu_operator role does "
                "with gpudirect_rdma_gpu_memory: peermem) and look at the driver pod's "
                "nvidia-peermem-ctr container",
                GPU_OPERATOR_RDMA,
            )
        )
    return results


def _rail_checks(node: str, found: dict, rail: dict, mtu: int | None) -> list[dict]:
    index, results = rail["index"], []
    state = (found.get(f"rail{index}-link") or ["unknown"])[0]
    if state == "ACTIVE":
        results.append(_finding(node, "link", "ok", "port ACTIVE", rail=index))
    else:
        results.append(
            _finding(
                node,
                "link",
                "failure",
                f"the port of rail {index} ({rail['interface']}) is {state}, not ACTIVE",
                "check the cable and the switch port; on InfiniBand a subnet manager must run "
                "(ibstat shows the state)",
                LOCAL_DOC,
                rail=index,
            )
        )
    seen = (found.get(f"rail{index}-mtu") or ["unknown"])[0]
    if seen.isdigit() and mtu and int(seen) < mtu:
        results.append(
            _finding(
                node,
                "mtu",
                "warning",
                f"net{index + 1} has MTU {seen}, below gpudirect_rdma_mtu {mtu}",
                "set the MTU on the rail's PF and its switch ports (the NIC's MTU limits the "
                "pod's)",
                LOCAL_DOC,
                rail=index,
            )
        )
    elif seen.isdigit():
        results.append(_finding(node, "mtu", "ok", f"MTU {seen}", rail=index))
    acs = found.get(f"rail{index}-acs") or ["unknown the pod printed no ACS facts"]
    unknown = [v.split(" ", 1)[1] if " " in v else v for v in acs if v.startswith("unknown")]
    redirecting = [v.split(" ", 1)[0] for v in acs if _REDIRECT.search(v)]
    if redirecting:
        results.append(
            _finding(
                node,
                "acs",
                "failure",
                f"ACS redirects peer-to-peer requests on {', '.join(redirecting)} between rail "
                f"{index}'s GPU and NIC: GPUDirect traffic goes up to the root complex",
                "disable ACS on those bridges in the BIOS (or setpci -s <bridge> "
                "ECAP_ACS+0x6.w=0000 at boot), and use iommu=pt",
                ACS_REFERENCE,
                rail=index,
            )
        )
    elif unknown:
        results.append(
            _finding(
                node,
                "acs",
                "warning",
                f"not checked: {unknown[0]}",
                "run lspci -vvv on the node (oc debug node/<node>) and look for ReqRedir+ in "
                "the bridges' ACSCtl",
                ACS_REFERENCE,
                rail=index,
            )
        )
    else:
        results.append(
            _finding(node, "acs", "ok", f"no redirect on {len(acs)} bridge(s)", rail=index)
        )
    return results


def _mtu_set(view: dict) -> int | None:
    """The MTU the collection gives the pods' interfaces, where it gives one."""
    macvlan = view["method"] == "shared_device" and view["fabric"] == "roce"
    return view.get("mtu") if macvlan or view["method"] == "sriov_legacy" else None


def judge(view: dict, logs_by_node: dict[str, str], rails: list[dict]) -> list[dict]:
    """Findings for each tested node from its pod's log; rails: the group's rails."""
    results = []
    for node, log in logs_by_node.items():
        found = facts(log)
        if not found:
            results.append(
                _finding(node, "facts", "unknown", "the pod printed no facts (it stopped first)")
            )
            continue
        results += _node_checks(node, found, view)
        for rail in rails:
            results += _rail_checks(node, found, rail, _mtu_set(view))
    return results
