#!/usr/bin/python
"""gpudirect.rdma.manifest_tree: write rendered files below a folder, idempotently."""

from __future__ import annotations

DOCUMENTATION = r"""
module: manifest_tree
author: gpudirect.rdma maintainers (!UNKNOWN)
version_added: 0.1.0
short_description: Write a rendered manifest tree to a folder
description:
  - Writes each file of O(files) below O(dest), creating folders as needed; a file whose content
    is already right is not touched.
extends_documentation_fragment:
  - gpudirect.rdma.tree
options:
  files:
    description: File contents by path relative to O(dest) (no absolute paths, no C(..)).
    type: dict
    required: true
  marker:
    description: First line that marks a file as rendered (and so as removable by O(prune)).
    type: str
    default: "# Rendered by gpudirect.rdma (playbooks/render.yml). Edit the inventory, not this file."
"""

EXAMPLES = r"""
- name: Write the configuration for Argo CD
  gpudirect.rdma.manifest_tree:
    dest: /srv/gitops/gpudirect-rdma
    files: "{{ rdma.plan | gpudirect.rdma.objects | gpudirect.rdma.kustomize_tree }}"
"""

RETURN = r"""
created:
  description: Files written that did not exist.
  returned: always
  type: list
  elements: str
updated:
  description: Files whose content changed.
  returned: always
  type: list
  elements: str
removed:
  description: Files of an earlier render removed by O(prune).
  returned: always
  type: list
  elements: str
unchanged:
  description: How many files already had the right content.
  returned: always
  type: int
"""

import os  # noqa: E402
import tempfile  # noqa: E402

from ansible.module_utils.basic import AnsibleModule  # noqa: E402

# The first line of every file that playbooks/render.yml writes (plugin_utils/render.py MARKER).
DEFAULT_MARKER = (
    "# Rendered by gpudirect.rdma (playbooks/render.yml). Edit the inventory, not this file."
)


def _safe_relative(path):
    parts = path.split("/")
    return path and not path.startswith("/") and ".." not in parts and "" not in parts


def _read(path):
    try:
        with open(path, encoding="utf-8") as handle:
            return handle.read()
    except FileNotFoundError:
        return None


def _rendered_files(dest, marker):
    """Relative paths of files below dest whose first line is the marker."""
    found = set()
    for root, _dirs, names in os.walk(dest):
        for name in names:
            path = os.path.join(root, name)
            with open(path, encoding="utf-8", errors="replace") as handle:
                if handle.readline().rstrip("\n") == marker:
                    found.add(os.path.relpath(path, dest))
    return found


def _write(path, content):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=os.path.dirname(path), prefix=".manifest-")
    with os.fdopen(handle, "w", encoding="utf-8") as out:
        out.write(content)
    os.chmod(temporary, 0o644)
    os.replace(temporary, path)


ARGUMENT_SPEC = {
    "dest": {"type": "path", "required": True},
    "files": {"type": "dict", "required": True},
    "prune": {"type": "bool", "default": True},
    "marker": {"type": "str", "default": DEFAULT_MARKER},
}


def main():
    run(AnsibleModule(argument_spec=ARGUMENT_SPEC, supports_check_mode=True))


def run(module):
    dest = module.params["dest"]
    files = module.params["files"]
    for relative, content in files.items():
        if not _safe_relative(relative):
            module.fail_json(
                msg=f"files: expected paths relative to dest without '..'; got {relative!r}"
            )
        if not isinstance(content, str):
            module.fail_json(
                msg=f"files[{relative!r}]: expected text; got {type(content).__name__}"
            )
    if os.path.exists(dest) and not os.path.isdir(dest):
        module.fail_json(msg=f"dest: expected a folder; {dest} is a file")

    created, updated, diffs = [], [], []
    unchanged = 0
    for relative in sorted(files):
        path = os.path.join(dest, relative)
        current = _read(path)
        if current == files[relative]:
            unchanged += 1
            continue
        (created if current is None else updated).append(relative)
        diffs.append(
            {
                "before_header": path,
                "after_header": path,
                "before": current or "",
                "after": files[relative],
            }
        )
        if not module.check_mode:
            _write(path, files[relative])

    removed = []
    if module.params["prune"] and os.path.isdir(dest):
        removed = sorted(_rendered_files(dest, module.params["marker"]) - set(files))
        for relative in removed:
            diffs.append(
                {
                    "before_header": os.path.join(dest, relative),
                    "after_header": "(removed)",
                    "before": _read(os.path.join(dest, relative)) or "",
                    "after": "",
                }
            )
            if not module.check_mode:
                os.remove(os.path.join(dest, relative))
        if not module.check_mode:
            for root, _dirs, _names in os.walk(dest, topdown=False):
                if root != dest and not os.listdir(root):
                    os.rmdir(root)

    result = {
        "changed": bool(created or updated or removed),
        "created": created,
        "updated": updated,
        "removed": removed,
        "unchanged": unchanged,
    }
    if module._diff:
        result["diff"] = diffs
    module.exit_json(**result)


if __name__ == "__main__":
    main()
