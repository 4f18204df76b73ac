"""gpudirect.rdma.render: documentation of the render action plugin (plugins/action/render.py)."""

from __future__ import annotations

DOCUMENTATION = r"""
module: render
author: gpudirect.rdma maintainers (!UNKNOWN)
version_added: 0.1.0
short_description: Plan the GPUDirect RDMA configuration from the inventory and write it as a kustomize tree
description:
  - What C(playbooks/render.yml) runs. Validates the inventory exactly as M(gpudirect.rdma.plan)
    does (the same C(gpudirect_rdma_*) variables and settings, the same messages, before
    anything is written), builds the objects as P(gpudirect.rdma.objects#filter) does, lays them
    out as P(gpudirect.rdma.kustomize_tree#filter) does and writes them as
    M(gpudirect.rdma.manifest_tree) does.
  - One task, so that the plan and the tree (1 MB at 1,000 nodes x 8 rails) never pass through
    Ansible's results. The objects are the ones C(playbooks/site.yml) applies. No cluster needed.
  - With C(gpudirect_rdma_nic_configuration), every node group needs its NIC types named
    (C(gpudirect_rdma_nic_type), globally or per group); C(site.yml) can take them from the
    cluster's NicDevices, a rendered tree cannot, so render fails naming the groups without one.
extends_documentation_fragment:
  - gpudirect.rdma.tree
"""

EXAMPLES = r"""
- name: Write the inventory's configuration for Argo CD
  gpudirect.rdma.render:
    dest: /srv/gitops/gpudirect-rdma
  register: rendered
"""

RETURN = r"""
created:
  description: Files written that did not exist.
  returned: success
  type: list
  elements: str
updated:
  description: Files whose content changed.
  returned: success
  type: list
  elements: str
removed:
  description: Files of an earlier render removed by O(prune).
  returned: success
  type: list
  elements: str
unchanged:
  description: How many files already had the right content.
  returned: success
  type: int
image_registry_secret:
  description:
    - The registry pull Secret the NicClusterPolicy names (C(name), C(namespace), C(registry)),
      which the tree leaves out; null without C(gpudirect_rdma_image_registry).
  returned: success
  type: dict
variable:
  description: The variable a bad value came from.
  returned: failure on a bad value
  type: str
"""
