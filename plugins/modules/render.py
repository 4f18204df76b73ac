"""gpudirect.rdma.render: documentation of the render action plugin (the code is
plugins/action/render.py)."""

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
  - One task instead of those three, so that the plan (which holds every persistent NIC name,
    8,000 of them at 1,000 nodes x 8 rails) and the tree (1 MB there) stay inside the task
    instead of passing through Ansible's results and templating. The objects are the ones
    C(playbooks/site.yml) applies.
  - Runs on the controller; needs no cluster.
attributes:
  check_mode:
    support: full
    description: Reports what would be written and removed, writes nothing.
  diff_mode:
    support: full
    description: Shows the changed file contents.
options:
  dest:
    description: Folder of the tree; created when missing.
    type: path
    required: true
  prune:
    description: Remove files of an earlier render that are no longer part of the tree.
    type: bool
    default: true
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
objects:
  description: How many objects the tree holds.
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
