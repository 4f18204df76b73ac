"""The options of the modules that write a rendered tree (manifest_tree, render)."""

from __future__ import annotations


class ModuleDocFragment:
    DOCUMENTATION = r"""
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
    description:
      - Remove files below O(dest) that an earlier render wrote (they start with the collection's
        marker line) and that are no longer part of the tree, for example the previous method's
        networks after switching method. Files without the marker are never touched.
    type: bool
    default: true
"""
