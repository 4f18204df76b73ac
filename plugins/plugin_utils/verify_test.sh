#!/usr/bin/env bash
# The GPUDirect RDMA bandwidth test, run inside each verification pod (one server pod and one
# client pod per node group, each holding every rail of its node). For each rail (net1, net2, ...)
# it finds the RDMA device behind the interface, the RoCEv2 IPv4 GID index on Ethernet (never
# assumed), and the GPU closest to that device on the PCIe tree (nvidia-smi topo -m: PIX, then
# PXB, PHB, NODE, SYS; a GPU no earlier rail took first), then runs one ib_write_bw per rail with
# GPU memory, all rails at once, and prints each rail's output between markers.
#
# Before the traffic it prints, read-only, what the host checks judge ("fact" lines): the kernel
# command line, the GPU driver's flavour, whether nvidia_peermem is loaded, and per rail the
# port's state, the interface's MTU and the ACS control of each PCIe bridge between the rail's
# GPU and NIC (lspci; unknown where lspci is missing or may not read the capability).
#
# Environment: ROLE (server|client), RAILS (how many), GPU_MEMORY (dmabuf|peermem), SIZE, QPS,
# DURATION, PORT (rail N listens on PORT+N), SERVER_IPS (client only: one address per rail,
# comma-separated), PERFTEST (the ib_write_bw binary), SYSFS (default /sys), PROC (default
# /proc).
set -euo pipefail
SYSFS="${SYSFS:-/sys}"
PROC="${PROC:-/proc}"
RAILS="${RAILS:-1}"
say() { echo "gpudirect-rdma-verify: $*"; }

# Sets address, device, gid_index and link_layer for the interface $1, or exits.
find_device() {
  local iface="$1" octet1 octet2 octet3 octet4 mapped ipoib_gid device_dir port_dir layer
  local type_file index
  address="$(ip -4 -o addr show dev "${iface}" | awk '{split($4, a, "/"); print a[1]; exit}')"
  if [ -z "${address}" ]; then
    echo "gpudirect-rdma-verify: ${iface} has no IPv4 address (ip -4 addr show ${iface})" >&2
    exit 2
  fi
  # RoCE: the RDMA device whose GID table holds the address as a RoCE v2 IPv4 GID (a macvlan, a
  # VF or a PF alike); its index is the -x users get wrong. InfiniBand: the device whose port
  # GID is the last 16 bytes of the interface's IPoIB hardware address.
  IFS=. read -r octet1 octet2 octet3 octet4 <<<"${address}"
  mapped="$(printf '0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x' \
    "${octet1}" "${octet2}" "${octet3}" "${octet4}")"
  ipoib_gid=""
  if [ -r "${SYSFS}/class/net/${iface}/address" ]; then
    ipoib_gid="$(cut -d: -f5- "${SYSFS}/class/net/${iface}/address" |
      awk -F: '{for (i = 1; i < NF; i += 2) printf "%s%s%s", (i > 1 ? ":" : ""), $i, $(i + 1)}')"
  fi
  device="" gid_index="" link_layer=""
  for device_dir in "${SYSFS}"/class/infiniband/*; do
    port_dir="${device_dir}/ports/1"
    layer="$(cat "${port_dir}/link_layer" 2>/dev/null || true)"
    if [ "${layer}" = "Ethernet" ]; then
      for type_file in "${port_dir}"/gid_attrs/types/*; do
        index="${type_file##*/}"
        if [ "$(cat "${type_file}" 2>/dev/null)" = "RoCE v2" ] &&
          [ "$(cat "${port_dir}/gids/${index}" 2>/dev/null)" = "${mapped}" ]; then
          device="${device_dir##*/}" gid_index="${index}" link_layer="${layer}"
          return
        fi
      done
    elif [ "${layer}" = "InfiniBand" ] && [ -n "${ipoib_gid}" ] &&
      [ "$(cat "${port_dir}/gids/0" 2>/dev/null)" = "${ipoib_gid}" ]; then
      device="${device_dir##*/}" link_layer="${layer}"
      return
    fi
  done
  local devices="" path
  for path in "${SYSFS}"/class/infiniband/*; do
    if [ -e "${path}" ]; then devices+="${path##*/} "; fi
  done
  echo "gpudirect-rdma-verify: no RDMA device carries ${iface} (${address}); devices:" \
    "${devices}" >&2
  exit 3
}

# The GPUs by their path to RDMA device $1, closest first: "index relation" lines, read off the
# topology matrix (columns split by tabs or spaces; NICs named in the NIC Legend or as columns).
gpus_by_distance() {
  awk -v device="$1" '
    BEGIN { rank["PIX"] = 1; rank["PXB"] = 2; rank["PHB"] = 3; rank["NODE"] = 4; rank["SYS"] = 5 }
    !header && $1 ~ /^GPU[0-9]+$/ { header = 1; for (i = 1; i <= NF; i++) column[i] = $i; next }
    header && $1 ~ /^GPU[0-9]+$/ { rows[$1] = $0; next }
    $1 ~ /^NIC[0-9]+:$/ { name = $1; sub(":", "", name); legend[name] = $2 }
    END {
      for (i in column) if (column[i] == device || legend[column[i]] == device) at = i + 1
      if (!at) exit
      for (gpu in rows) {
        split(rows[gpu], field)
        if (field[at] in rank) printf "%d %d %s\n", rank[field[at]], substr(gpu, 4), field[at]
      }
    }' | sort -k1,1n -k2,2n | awk '{ print $2, $3 }'
}

# The PCI addresses on the sysfs path of device path $1 (root port first, the device last).
pci_chain() {
  readlink -f "$1" 2>/dev/null | tr / '\n' | grep -E '^[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-9a-f]$' || true
}

# "fact rail<N>-acs <bridge> <ACSCtl flags>" for each bridge between GPU bus id $2 and RDMA
# device $3: the bridges below the deepest one both paths share (that one when there is none).
acs_facts() {
  local rail="$1" gpu_bus="$2" device="$3" bridge line
  local -a gpu_path nic_path bridges
  if ! command -v lspci >/dev/null 2>&1; then
    say "fact rail${rail}-acs unknown lspci is not in the image"
    return
  fi
  mapfile -t gpu_path < <(pci_chain "${SYSFS}/bus/pci/devices/$(echo "${gpu_bus:4}" | tr 'A-F' 'a-f')")
  mapfile -t nic_path < <(pci_chain "${SYSFS}/class/infiniband/${device}/device")
  if [ "${#gpu_path[@]}" -eq 0 ] || [ "${#nic_path[@]}" -eq 0 ]; then
    say "fact rail${rail}-acs unknown no PCIe path in sysfs for GPU ${gpu_bus} or ${device}"
    return
  fi
  local common=0
  while [ "${common}" -lt $((${#gpu_path[@]} - 1)) ] && [ "${common}" -lt $((${#nic_path[@]} - 1)) ] &&
    [ "${gpu_path[common]}" = "${nic_path[common]}" ]; do
    common=$((common + 1))
  done
  bridges=("${gpu_path[@]:common:${#gpu_path[@]}-common-1}" "${nic_path[@]:common:${#nic_path[@]}-common-1}")
  if [ "${#bridges[@]}" -eq 0 ] && [ "${common}" -gt 0 ]; then
    bridges=("${gpu_path[common-1]}")
  fi
  for bridge in "${bridges[@]}"; do
    line="$(lspci -vvv -s "${bridge}" 2>&1 | grep -m1 -E 'ACSCtl:|access denied' || true)"
    case "${line}" in
      *ACSCtl:*) say "fact rail${rail}-acs ${bridge} ${line#*ACSCtl:}" ;;
      *denied*) say "fact rail${rail}-acs unknown lspci may not read ${bridge}'s capabilities (not privileged)" ;;
      *) say "fact rail${rail}-acs ${bridge} none" ;;
    esac
  done
}

say "fact cmdline $(cat "${PROC}/cmdline" 2>/dev/null || echo unknown)"
say "fact gpu-driver $(head -n1 "${PROC}/driver/nvidia/version" 2>/dev/null || echo unknown)"
if [ -d "${SYSFS}/module/nvidia_peermem" ]; then
  say "fact peermem loaded"
else
  say "fact peermem absent"
fi

ports=()
addresses=()
devices=()
gid_indexes=()
layers=()
for ((rail = 0; rail < RAILS; rail++)); do
  find_device "net$((rail + 1))"
  addresses+=("${address}") devices+=("${device}") gid_indexes+=("${gid_index}")
  layers+=("${link_layer}")
  ports+=($((${PORT:-10000} + rail)))
done

topology=""
buses=()
if command -v nvidia-smi >/dev/null 2>&1; then
  topology="$(nvidia-smi topo -m 2>/dev/null || true)"
  while IFS=', ' read -r index bus; do
    buses[index]="${bus}"
  done < <(nvidia-smi --query-gpu=index,pci.bus_id --format=csv,noheader 2>/dev/null || true)
fi
if [ -n "${topology}" ]; then
  say "topology (nvidia-smi topo -m) begin"
  echo "${topology}"
  say "topology end"
fi

IFS=, read -r -a server_ips <<<"${SERVER_IPS:-}"
work="$(mktemp -d)"
taken=" "
pids=()
for ((rail = 0; rail < RAILS; rail++)); do
  gpu="" relation="unknown"
  if [ -n "${topology}" ]; then
    # The closest GPU; of several as close, the first no earlier rail took.
    candidates=() paths=()
    while read -r index path; do
      candidates+=("${index}") paths+=("${path}")
    done < <(gpus_by_distance "${devices[rail]}" <<<"${topology}")
    for ((i = 0; i < ${#candidates[@]}; i++)); do
      if [ "${paths[i]}" != "${paths[0]}" ]; then break; fi
      if [[ "${taken}" != *" ${candidates[i]} "* ]]; then
        gpu="${candidates[i]}" relation="${paths[i]}"
        break
      fi
    done
    if [ -z "${gpu}" ] && [ "${#candidates[@]}" -gt 0 ]; then
      gpu="${candidates[0]}" relation="${paths[0]}"
    fi
  elif [ "${#buses[@]}" -gt 0 ]; then
    # No topology matrix: the first GPU on the NIC's NUMA node.
    nic_numa="$(cat "${SYSFS}/class/infiniband/${devices[rail]}/device/numa_node" 2>/dev/null ||
      echo -1)"
    for index in "${!buses[@]}"; do
      # nvidia-smi says 00000000:17:00.0, sysfs 0000:17:00.0
      bus_dir="${SYSFS}/bus/pci/devices/$(echo "${buses[index]:4}" | tr 'A-F' 'a-f')"
      if [ "$(cat "${bus_dir}/numa_node" 2>/dev/null || echo -2)" = "${nic_numa}" ]; then
        gpu="${index}"
        break
      fi
    done
  fi
  gpu="${gpu:-0}"
  taken+="${gpu} "
  args=(-F --report_gbits -s "${SIZE:-65536}" -q "${QPS:-16}" -D "${DURATION:-30}" -m 4096
    -d "${devices[rail]}" -p "${ports[rail]}" --source_ip "${addresses[rail]}")
  if [ -n "${gid_indexes[rail]}" ]; then
    args+=(-x "${gid_indexes[rail]}")
  fi
  args+=("--use_cuda=${gpu}")
  if [ "${GPU_MEMORY:-dmabuf}" = "dmabuf" ]; then
    args+=(--use_cuda_dmabuf)
  fi
  if [ "${ROLE}" = "client" ]; then
    if [ -z "${server_ips[rail]:-}" ]; then
      echo "gpudirect-rdma-verify: the client needs one SERVER_IPS address per rail" >&2
      exit 2
    fi
    args+=("${server_ips[rail]}")
  fi
  say "rail ${rail} ${ROLE} on ${devices[rail]} (${layers[rail]}) ${addresses[rail]}" \
    "GPU ${gpu} ${buses[gpu]:-?} ${relation}: ${PERFTEST:-ib_write_bw} ${args[*]}"
  state="$(cut -d: -f2 "${SYSFS}/class/infiniband/${devices[rail]}/ports/1/state" 2>/dev/null || echo unknown)"
  say "fact rail${rail}-link ${state# }"
  say "fact rail${rail}-mtu $(cat "${SYSFS}/class/net/net$((rail + 1))/mtu" 2>/dev/null || echo unknown)"
  if [ -n "${buses[gpu]:-}" ]; then
    acs_facts "${rail}" "${buses[gpu]}" "${devices[rail]}"
  else
    say "fact rail${rail}-acs unknown no GPU bus id (nvidia-smi)"
  fi
  "${PERFTEST:-ib_write_bw}" "${args[@]}" >"${work}/rail${rail}.log" 2>&1 &
  pids+=($!)
done

failed=0
for ((rail = 0; rail < RAILS; rail++)); do
  status=0
  wait "${pids[rail]}" || status=$?
  say "rail ${rail} output begin"
  cat "${work}/rail${rail}.log"
  say "rail ${rail} output end (exit ${status})"
  if [ "${status}" -ne 0 ]; then failed="${status}"; fi
done
exit "${failed}"
