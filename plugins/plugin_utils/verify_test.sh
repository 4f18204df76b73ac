#!/usr/bin/env bash
# The GPUDirect RDMA bandwidth test, run inside each verification pod (one server pod and one
# client pod per node group, each holding every rail of its node). For each rail (net1, net2, ...)
# it finds the RDMA device behind the interface, the RoCEv2 IPv4 GID index on Ethernet (never
# assumed), and the rail's GPU: pair_rails below reads `nvidia-smi topo -m` by the rule of
# plugins/plugin_utils/topology.py (the closest GPU, PIX then PXB, PHB, NODE, SYS; of several as
# close, one no earlier rail took; a VF the matrix does not list is found by its PF). It then runs
# one ib_write_bw per rail with GPU memory, all rails at once, and prints each rail's output
# between markers.
#
# Before the traffic it prints, read-only, what the host checks judge ("fact" lines), each read
# from the kernel's own state: the kernel command line, the boot log's IOMMU line, the GPU
# driver's flavour, whether nvidia_peermem is loaded, and per rail the port's state and rate, the
# interface's MTU, the IOMMU group type of the rail's GPU and NIC, and the ACS control of each
# PCIe bridge between them (lspci; unknown where lspci is missing or may not read the
# capability).
#
# Environment: ROLE (server|client|facts|isolation), RAILS (how many), GPU_MEMORY
# (dmabuf|peermem), SIZE, QPS, DURATION, PORT (rail N listens on PORT+N), SERVER_IPS (client
# only: one address per rail, comma-separated), PERFTEST (the ib_write_bw binary), SYSFS (default
# /sys), PROC (default /proc), ISOLATION_FILE (what the init container found, printed as a fact;
# see ROLE=isolation). ROLE=facts prints the facts, the matrix and the pairing of every RDMA
# device of the node, and runs no traffic (what make test-gpu runs on a GPU machine).
set -euo pipefail
SYSFS="${SYSFS:-/sys}"
PROC="${PROC:-/proc}"
RAILS="${RAILS:-1}"
say() { echo "gpudirect-rdma-verify: $*"; }

# ROLE=isolation, the pod's init container, asks for a GPU and no RDMA resource: what it finds in
# /dev/infiniband (DEV, default /dev) goes to ISOLATION_FILE, for the test container to print
# as the rdma-isolation fact. "none" is right: only an RDMA resource should bring those devices.
if [ "${ROLE:-}" = isolation ]; then
  seen=""
  if [ -d "${DEV:-/dev}/infiniband" ]; then
    seen="$(ls -A "${DEV:-/dev}/infiniband")"
    seen="${seen//$'\n'/ }"
  fi
  echo "${seen:-none}" >"${ISOLATION_FILE}"
  say "rdma-isolation: /dev/infiniband of a container with a GPU and no RDMA resource: ${seen:-none}"
  exit 0
fi

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

# Each rail's GPU from the matrix on stdin; $1: the rails' "<device>:<its PF's device or ->",
# comma-separated, in rail order. Prints "error <message>", or per rail
# "<rail> <gpu or -> <relation> <shared with rail or -> <the NIC it was found as, or ->".
# The program between the PAIR_RAILS markers is what the contract test runs beside topology.py.
read -r -d '' PAIR_RAILS <<'PAIR_RAILS' || true
# pair_rails: the same rule as plugins/plugin_utils/topology.py (parse, then pair_rails), which
# says it in full; the contract test requires the same answers and messages of both.
# Input: the matrix; -v rails="<device>:<pf or ->,..." in rail order.
# Output: "error <message>", or per rail "<rail> <gpu or -> <relation> <shared-with or -> <nic or ->".
function fail(message) { print "error " message; failed = 1; exit }
function trim(s) { sub(/^[ \t\r\n\v\f]+/, "", s); sub(/[ \t\r\n\v\f]+$/, "", s); return s }
# The cells of line into out[1..n], as topology._cells: at tabs (empties kept) or at blanks.
function cells(line, out,   n, i) {
  if (index(line, "\t")) {
    n = split(line, out, "\t")
    for (i = 1; i <= n; i++) out[i] = trim(out[i])
    return n
  }
  return split(line, out, " ")
}
function is_title(s) { return s == "CPU Affinity" || s == "NUMA Affinity" || s == "GPU NUMA ID" }
function joined(list, n,   i, s) { s = list[1]; for (i = 2; i <= n; i++) s = s ", " list[i]; return s }
BEGIN { relations = "PIX PXB PHB NODE SYS"; split(relations, order, " ")
  for (i = 1; i <= 5; i++) rank[order[i]] = i
  relations_shown = "PIX, PXB, PHB, NODE, SYS" }
{ line = $0; sub(/\r$/, "", line); gsub(/\033\[[0-9;]*[A-Za-z]/, "", line); text[++lines] = line }
END {
  if (failed) exit
  start = 0
  for (l = 1; l <= lines && !start; l++) {
    n = cells(text[l], c); first = ""
    for (i = 1; i <= n; i++) if (c[i] != "") { first = c[i]; break }
    if (first == "GPU0") start = l
  }
  if (!start) fail("expected the matrix of `nvidia-smi topo -m` (a header line starting with GPU0); found " (lines ? lines " line(s) without one" : "no output"))
  # The header's titles: non-empty cells; in a pasted copy the words of a title joined again.
  n = cells(text[start], c); titles = 0; tabs = index(text[start], "\t")
  for (i = 1; i <= n; i++) {
    if (c[i] == "") continue
    if (!tabs && c[i] == "CPU" && c[i + 1] == "Affinity") { title[++titles] = "CPU Affinity"; i++; continue }
    if (!tabs && c[i] == "NUMA" && c[i + 1] == "Affinity") { title[++titles] = "NUMA Affinity"; i++; continue }
    if (!tabs && c[i] == "GPU" && c[i + 1] == "NUMA" && c[i + 2] == "ID") { title[++titles] = "GPU NUMA ID"; i += 2; continue }
    title[++titles] = c[i]
  }
  devices = 0; seen_title = 0
  for (i = 1; i <= titles; i++) {
    if (is_title(title[i])) { seen_title = 1; continue }
    if (seen_title) fail("header cell '" title[i] "' follows the affinity columns: the output is not from `nvidia-smi topo -m`")
    device[++devices] = title[i]; column[title[i]] = devices
  }
  complete = 0; rows = 0
  for (l = start + 1; l <= lines; l++) {
    if (text[l] ~ /^[ \t\r\n\v\f]*$/) { if (rows) { complete = 1; break }; continue }
    n = cells(text[l], c); label = c[1]
    if (!(label in column)) fail("a row of the matrix starts with '" label "', which is no column of the header (" joined(device, devices) "): the output is not from `nvidia-smi topo -m`")
    rows++; has_row[label] = 1; width[label] = n - 1
    for (i = 2; i <= n; i++) cell[label, i - 1] = c[i]
  }
  missing = 0; unknown = ""
  for (d = 1; d <= devices; d++) if (!(device[d] in has_row)) {
    lost[++missing] = device[d]
    if (unknown == "" && device[d] !~ /^GPU[0-9]+$/ && device[d] !~ /^NIC[0-9]+$/) unknown = device[d]
  }
  if (missing && unknown != "" && complete) fail("header cell '" unknown "' is neither a device with a row of its own nor one of CPU Affinity, NUMA Affinity, GPU NUMA ID")
  if (missing) fail("no row for " joined(lost, missing) ": the output is cut short or not from `nvidia-smi topo -m`")
  for (d = 1; d <= devices; d++) {
    label = device[d]; filled = 0
    for (i = 1; i <= devices && i <= width[label]; i++) if (cell[label, i] != "") filled++
    if (width[label] < devices || filled < devices) fail("row " label " has " filled " cell(s), expected " devices " (one per device in the header): the output is cut short or not from `nvidia-smi topo -m`")
  }
  for (l = start; l <= lines; l++) if (text[l] ~ /^[ \t]*NIC[0-9]+[ \t]*:[ \t]*[^ \t]+[ \t]*$/) {
    entry = text[l]; gsub(/[ \t]/, "", entry); split(entry, kv, ":"); legend[kv[1]] = kv[2]
  }
  gpus = 0; nics = 0
  for (d = 1; d <= devices; d++) {
    if (device[d] ~ /^GPU[0-9]+$/) { gpu[++gpus] = device[d]; continue }
    nic[++nics] = device[d]
    if (device[d] ~ /^NIC[0-9]+$/) {
      if (!(device[d] in legend)) fail("column " device[d] " has no entry in the NIC Legend (expected a line such as '" device[d] ": mlx5_0' below the matrix; the output may be cut short)")
      name[device[d]] = legend[device[d]]
    } else name[device[d]] = device[d]
  }
  for (g = 1; g <= gpus; g++) for (d = 1; d <= devices; d++) {
    value = cell[gpu[g], d]
    if (device[d] ~ /^GPU[0-9]+$/) {
      if (value != "X" && !(value in rank) && value !~ /^NV[0-9]+$/) fail(gpu[g] " to " device[d] ": got '" value "'; expected X, NV<n> or one of " relations_shown)
    } else if (!(value in rank)) fail(gpu[g] " to " name[device[d]] " (" device[d] "): got '" value "'; expected one of " relations_shown)
  }
  if (!nics) fail("the matrix has no NIC column: nvidia-smi sees no NIC on this node")
  for (x = 1; x <= nics; x++) by_name[name[nic[x]]] = column[nic[x]]
  count = split(rails, rail, ",")
  for (r = 1; r <= count; r++) {
    split(rail[r], parts, ":"); wanted = ""
    if (parts[1] in by_name) wanted = parts[1]
    else if (parts[2] != "-" && parts[2] in by_name) wanted = parts[2]
    if (wanted == "") { print (r - 1) " - unknown - -"; continue }
    at = by_name[wanted]; best = 6
    for (g = 1; g <= gpus; g++) if (rank[cell[gpu[g], at]] < best) best = rank[cell[gpu[g], at]]
    # GPUs as close as the closest, by index: the first free one, else the first (shared).
    pick = ""; first = ""
    for (index_ = 0; index_ <= 1023 && pick == ""; index_++) {
      label = "GPU" index_
      if (!(label in column) || rank[cell[label, at]] != best) continue
      if (first == "") first = index_
      if (!(index_ in taken)) pick = index_
    }
    shared = "-"
    if (pick == "") { pick = first; shared = taken[pick] }
    else taken[pick] = r - 1
    print (r - 1) " " pick " " order[best] " " shared " " wanted
  }
}
PAIR_RAILS
pair_rails() { awk -v rails="$1" "${PAIR_RAILS}"; }

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

# The sysfs name of a PCI address as nvidia-smi prints it: 00000000:1A:00.0 is 0000:1a:00.0.
sysfs_bdf() { echo "${1:4}" | tr 'A-F' 'a-f'; }

# "fact iommu-group <what> <address> <type>": the domain type of the device's IOMMU group, as the
# kernel says it (identity: DMA passes untranslated; DMA or DMA-FQ: translated); none when the
# device is in no IOMMU group.
iommu_fact() {
  local group="${SYSFS}/bus/pci/devices/$2/iommu_group"
  if [ -e "${group}" ]; then
    say "fact iommu-group $1 $2 $(cat "${group}/type" 2>/dev/null || echo unknown)"
  else
    say "fact iommu-group $1 $2 none"
  fi
}

# The RDMA device of the PF of RDMA device $1 when $1 is a VF (the matrix may list PFs only).
pf_of() {
  local physfn="${SYSFS}/class/infiniband/$1/device/physfn" name
  if [ -e "${physfn}" ]; then
    for name in "$(readlink -f "${physfn}")"/infiniband/*; do
      if [ -e "${name}" ]; then
        echo "${name##*/}"
        return
      fi
    done
  fi
}

say "fact cmdline $(cat "${PROC}/cmdline" 2>/dev/null || echo unknown)"
boot_iommu="$(dmesg 2>/dev/null | grep -m1 -o 'iommu: Default domain type: .*' || true)"
say "fact iommu-boot ${boot_iommu:-unknown (the boot log is not readable here)}"
say "fact gpu-driver $(head -n1 "${PROC}/driver/nvidia/version" 2>/dev/null || echo unknown)"
if [ -d "${SYSFS}/module/nvidia_peermem" ]; then
  say "fact peermem loaded"
else
  say "fact peermem absent"
fi
if [ -n "${ISOLATION_FILE:-}" ]; then
  say "fact rdma-isolation $(cat "${ISOLATION_FILE}" 2>/dev/null || echo unknown)"
fi

ports=()
addresses=()
devices=()
gid_indexes=()
layers=()
if [ "${ROLE}" = facts ]; then
  for path in "${SYSFS}"/class/infiniband/*; do
    if [ -e "${path}" ]; then devices+=("${path##*/}"); fi
  done
  RAILS="${#devices[@]}"
  say "facts: ${RAILS} RDMA device(s) on this node: ${devices[*]:-none}"
else
  for ((rail = 0; rail < RAILS; rail++)); do
    find_device "net$((rail + 1))"
    addresses+=("${address}") devices+=("${device}") gid_indexes+=("${gid_index}")
    layers+=("${link_layer}")
    ports+=($((${PORT:-10000} + rail)))
  done
fi

topology=""
buses=()
if command -v nvidia-smi >/dev/null 2>&1; then
  topology="$(nvidia-smi topo -m 2>/dev/null || true)"
  while IFS=', ' read -r index bus; do
    if [ -n "${bus}" ]; then buses[index]="${bus}"; fi
  done < <(nvidia-smi --query-gpu=index,pci.bus_id --format=csv,noheader 2>/dev/null || true)
fi
if [ -n "${topology}" ]; then
  say "topology (nvidia-smi topo -m) begin"
  echo "${topology}"
  say "topology end"
fi
for index in "${!buses[@]}"; do
  iommu_fact "gpu${index}" "$(sysfs_bdf "${buses[index]}")"
done

# Each rail's GPU, decided once, here, from the matrix (pair_rails); the report judges it as is.
pfs=()
spec=""
for ((rail = 0; rail < RAILS; rail++)); do
  pf="$(pf_of "${devices[rail]}")"
  pfs+=("${pf:--}")
  spec+="${spec:+,}${devices[rail]}:${pf:--}"
done
pairing=()
if [ -n "${topology}" ]; then
  decided="$(pair_rails "${spec}" <<<"${topology}")"
  if [ "${decided%% *}" = error ]; then
    say "topology unreadable: ${decided#error }"
  elif [ -n "${decided}" ]; then
    mapfile -t pairing <<<"${decided}"
  fi
fi

IFS=, read -r -a server_ips <<<"${SERVER_IPS:-}"
work="$(mktemp -d)"
pids=()
for ((rail = 0; rail < RAILS; rail++)); do
  gpu="" relation="unknown" shared="-" found_as="-" source="none"
  if [ "${#pairing[@]}" -gt "${rail}" ]; then
    read -r _ gpu relation shared found_as <<<"${pairing[rail]}"
    if [ "${gpu}" = - ]; then gpu=""; else source="matrix"; fi
  fi
  if [ -z "${gpu}" ] && [ "${#buses[@]}" -gt 0 ]; then
    # No GPU from the matrix: the first GPU on the NIC's NUMA node (the path stays unknown).
    nic_numa="$(cat "${SYSFS}/class/infiniband/${devices[rail]}/device/numa_node" 2>/dev/null ||
      echo -1)"
    for index in "${!buses[@]}"; do
      bus_dir="${SYSFS}/bus/pci/devices/$(sysfs_bdf "${buses[index]}")"
      if [ "$(cat "${bus_dir}/numa_node" 2>/dev/null || echo -2)" = "${nic_numa}" ]; then
        gpu="${index}" source="numa"
        break
      fi
    done
  fi
  if [ -z "${gpu}" ]; then gpu=0 source="${source/none/first}"; fi
  say "pairing rail ${rail} nic ${devices[rail]} pf ${pfs[rail]} found-as ${found_as}" \
    "gpu ${gpu} relation ${relation} shared ${shared} source ${source}"
  nic_bdf="$(readlink -f "${SYSFS}/class/infiniband/${devices[rail]}/device" 2>/dev/null || true)"
  if [ -n "${nic_bdf}" ]; then iommu_fact "rail${rail}-nic" "${nic_bdf##*/}"; fi
  state="$(cut -d: -f2 "${SYSFS}/class/infiniband/${devices[rail]}/ports/1/state" 2>/dev/null || echo unknown)"
  say "fact rail${rail}-link ${state# }"
  say "fact rail${rail}-rate $(cat "${SYSFS}/class/infiniband/${devices[rail]}/ports/1/rate" 2>/dev/null || echo unknown)"
  if [ -n "${buses[gpu]:-}" ]; then
    acs_facts "${rail}" "${buses[gpu]}" "${devices[rail]}"
  else
    say "fact rail${rail}-acs unknown no GPU bus id (nvidia-smi)"
  fi
  if [ "${ROLE}" = facts ]; then continue; fi
  say "fact rail${rail}-mtu $(cat "${SYSFS}/class/net/net$((rail + 1))/mtu" 2>/dev/null || echo unknown)"
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
  "${PERFTEST:-ib_write_bw}" "${args[@]}" >"${work}/rail${rail}.log" 2>&1 &
  pids+=($!)
done
if [ "${ROLE}" = facts ]; then exit 0; fi

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
