"""The verification's host checks: the read-only facts a test pod prints before its traffic
(verify_test.sh's "fact" lines) judged into findings, each saying what to change and where to
read about it (pure: log text and plan in, findings out).

Checks, per tested node (each finding names the node and, where it is a rail's, the rail):
- acs: Access Control Services redirecting requests (ReqRedir+ or CmpltRedir+ in ACSCtl) on a
  PCIe bridge between a rail's GPU and NIC sends every GPUDirect transfer up to the root
  complex: failure. Unknown (no lspci, or not allowed to read the capability): warning.
- iommu: an IOMMU that translates DMA (intel_iommu=on or amd_iommu=on without iommu=pt) also
  turns ACS on and costs GPUDirect bandwidth: warning.
- gpu-driver: DMA-BUF needs the GPU's open kernel modules: failure with the proprietary ones
  when the plan registers GPU memory by DMA-BUF.
- peermem: the peermem mode needs nvidia_peermem loaded: failure when it is absent.
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


def facts(log: str) -> dict[str, list[str]]:
    """The pod's facts by key, in the order printed (a key such as rail0-acs may repeat)."""
    found: dict[str, list[str]] = {}
    for match in _FACT.finditer(log):
        found.setdefault(match["key"], []).append(match["value"].strip())
    return found


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


def _node_checks(node: str, found: dict, plan: dict) -> list[dict]:
    results = []
    cmdline = (found.get("cmdline") or ["unknown"])[0]
    arguments = cmdline.split()
    translating = [a for a in arguments if a in ("intel_iommu=on", "amd_iommu=on")]
    if cmdline == "unknown":
        results.append(_finding(node, "iommu", "unknown", "the pod could not read /proc/cmdline"))
    elif translating and "iommu=pt" not in arguments:
        results.append(
            _finding(
                node,
                "iommu",
                "warning",
                f"{translating[0]} without iommu=pt: the IOMMU translates every DMA and the "
                "kernel turns ACS on",
                "add the kernel argument iommu=pt in a MachineConfig for the GPU nodes' pool "
                "(or turn the IOMMU off in the BIOS)",
                ACS_REFERENCE,
            )
        )
    else:
        shown = " ".join(a for a in arguments if "iommu" in a) or "no IOMMU argument"
        results.append(_finding(node, "iommu", "ok", shown))
    driver = (found.get("gpu-driver") or ["unknown"])[0]
    memory = plan["gpu"]["memory"]
    if driver == "unknown":
        results.append(
            _finding(
                node, "gpu-driver", "unknown", "the pod could not read the GPU driver's version"
            )
        )
    elif "Open Kernel Module" in driver:
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


def _mtu_set(plan: dict) -> int | None:
    """The MTU the collection gives the pods' interfaces, where it gives one."""
    macvlan = plan["method"] == "shared_device" and plan["fabric"] == "roce"
    return plan.get("mtu") if macvlan or plan["method"] == "sriov_legacy" else None


def judge(plan: dict, logs_by_node: dict[str, str], rails: list[dict]) -> list[dict]:
    """Findings for each tested node from its pod's log; rails: the group's rails."""
    results = []
    for node, log in logs_by_node.items():
        found = facts(log)
        if not found:
            results.append(
                _finding(node, "facts", "unknown", "the pod printed no facts (it stopped first)")
            )
            continue
        results += _node_checks(node, found, plan)
        for rail in rails:
            results += _rail_checks(node, found, rail, _mtu_set(plan))
    return results
