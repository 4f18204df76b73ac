#!/usr/bin/env bash
# The GPUDirect RDMA bandwidth test, run inside each verification pod (server or client).
# It finds the RDMA device behind net1, the RoCEv2 IPv4 GID index on Ethernet (never assumed),
# the GPU to use, then runs ib_write_bw with GPU memory.
#
# Environment: ROLE (server|client), GPU_MEMORY (dmabuf|peermem), SIZE, QPS, DURATION, PORT,
# SERVER_IP (client only), PERFTEST (the ib_write_bw binary), SYSFS (default /sys).
set -euo pipefail
SYSFS="${SYSFS:-/sys}"
IFACE="${IFACE:-net1}"

address="$(ip -4 -o addr show dev "${IFACE}" | awk '{split($4, a, "/"); print a[1]; exit}')"
if [ -z "${address}" ]; then
  echo "gpudirect-rdma-verify: ${IFACE} has no IPv4 address (ip -4 addr show ${IFACE})" >&2
  exit 2
fi
# RoCE: the RDMA device whose GID table holds net1's address as a RoCE v2 IPv4 GID (a macvlan,
# a VF or a PF alike); its index is the -x users get wrong. InfiniBand: the device whose port GID
# is the last 16 bytes of net1's IPoIB hardware address.
IFS=. read -r octet1 octet2 octet3 octet4 <<<"${address}"
mapped="$(printf '0000:0000:0000:0000:0000:ffff:%02x%02x:%02x%02x' "${octet1}" "${octet2}" "${octet3}" "${octet4}")"
ipoib_gid=""
if [ -r "${SYSFS}/class/net/${IFACE}/address" ]; then
  ipoib_gid="$(cut -d: -f5- "${SYSFS}/class/net/${IFACE}/address" |
               awk -F: '{for (i = 1; i < NF; i += 2) printf "%s%s%s", (i > 1 ? ":" : ""), $i, $(i + 1)}')"
fi
device=""
gid_index=""
link_layer=""
for device_dir in "${SYSFS}"/class/infiniband/*; do
  port_dir="${device_dir}/ports/1"
  layer="$(cat "${port_dir}/link_layer" 2>/dev/null || true)"
  if [ "${layer}" = "Ethernet" ]; then
    for type_file in "${port_dir}"/gid_attrs/types/*; do
      index="${type_file##*/}"
      if [ "$(cat "${type_file}" 2>/dev/null)" = "RoCE v2" ] &&
         [ "$(cat "${port_dir}/gids/${index}" 2>/dev/null)" = "${mapped}" ]; then
        device="${device_dir##*/}" gid_index="${index}" link_layer="${layer}"
        break 2
      fi
    done
  elif [ "${layer}" = "InfiniBand" ] && [ -n "${ipoib_gid}" ] &&
       [ "$(cat "${port_dir}/gids/0" 2>/dev/null)" = "${ipoib_gid}" ]; then
    device="${device_dir##*/}" link_layer="${layer}"
    break
  fi
done
if [ -z "${device}" ]; then
  devices=""
  for path in "${SYSFS}"/class/infiniband/*; do
    if [ -e "${path}" ]; then devices+="${path##*/} "; fi
  done
  echo "gpudirect-rdma-verify: no RDMA device carries ${IFACE} (${address}); devices:" \
    "${devices}" >&2
  exit 3
fi
gid_args=()
if [ -n "${gid_index}" ]; then
  gid_args=(-x "${gid_index}")
fi

# The pod is given one GPU (nvidia.com/gpu: 1); with several, take the one on the NIC's NUMA node.
gpu=0
if command -v nvidia-smi >/dev/null 2>&1; then
  nic_numa="$(cat "${SYSFS}/class/infiniband/${device}/device/numa_node" 2>/dev/null || echo -1)"
  while IFS=', ' read -r index bus; do
    # nvidia-smi says 00000000:17:00.0, sysfs 0000:17:00.0
    bus_dir="${SYSFS}/bus/pci/devices/$(echo "${bus:4}" | tr 'A-F' 'a-f')"
    if [ "$(cat "${bus_dir}/numa_node" 2>/dev/null || echo -2)" = "${nic_numa}" ]; then
      gpu="${index}"
      break
    fi
  done < <(nvidia-smi --query-gpu=index,pci.bus_id --format=csv,noheader 2>/dev/null)
fi

args=(-F --report_gbits -s "${SIZE:-65536}" -q "${QPS:-16}" -D "${DURATION:-30}" -m 4096
      -d "${device}" -p "${PORT:-10000}" --source_ip "${address}" "${gid_args[@]}"
      "--use_cuda=${gpu}")
if [ "${GPU_MEMORY:-dmabuf}" = "dmabuf" ]; then
  args+=(--use_cuda_dmabuf)
fi
if [ "${ROLE}" = "client" ]; then
  args+=("${SERVER_IP:?the client needs SERVER_IP}")
fi
echo "gpudirect-rdma-verify: ${ROLE} on ${device} (${link_layer}) ${address} GPU ${gpu}: ${PERFTEST:-ib_write_bw} ${args[*]}"
exec "${PERFTEST:-ib_write_bw}" "${args[@]}"
