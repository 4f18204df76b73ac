"""Python's own bytecode cache for the collection's code.

Ansible's collection loader compiles a module from its source at every import and keeps no
bytecode, so every ansible-playbook run compiled the collection's code again: about 11,000 lines
for site.yml's first task, 0.09 s of a converged run of 0.8 s (benchmarks/README.md). The finder
below answers first for this collection's modules and loads each as Python loads any installed
library (importlib.machinery.SourceFileLoader): from __pycache__ beside the source when that is
current (the source's size and time), else compiled and written there, unless the folder is
read-only or PYTHONDONTWRITEBYTECODE is set (then it compiles as Ansible's loader does). Python
3.12's `python -m compileall <the collection>` writes the cache ahead, for an execution environment
whose collection folder is read-only.

It takes only what is a plain file on disk: a package's parents and anything else (a module
shipped to a host inside AnsiballZ's zip, a name Ansible redirects) stay with Ansible's loader.
"""

from __future__ import annotations

import importlib.util
import os
import sys

PACKAGE = "ansible_collections.gpudirect.rdma.plugins."


class CachedSourceFinder:
    """A meta path finder for the modules below PACKAGE that are files on disk."""

    @staticmethod
    def find_spec(fullname: str, path=None, target=None):
        del target
        if not fullname.startswith(PACKAGE) or not path:
            return None
        name = fullname.rpartition(".")[2]
        for folder in path:
            package = os.path.join(folder, name, "__init__.py")
            if os.path.isfile(package):
                return importlib.util.spec_from_file_location(
                    fullname, package, submodule_search_locations=[os.path.dirname(package)]
                )
            module = os.path.join(folder, name + ".py")
            if os.path.isfile(module):
                return importlib.util.spec_from_file_location(fullname, module)
        return None


# Ansible's collection finder, told by its class's name: importing it (ansible.utils) is not
# allowed to module_utils, and no module outside the controller has it.
ANSIBLE_FINDER = "_AnsibleCollectionFinder"


def install() -> None:
    """Put the finder on sys.meta_path just before Ansible's collection finder, once a process
    (where Ansible's is first, as in ansible-playbook, it becomes first; finders put before
    Ansible's by others, ansible-test's, stay first). Without Ansible's finder, nothing: the
    collection's modules are loaded by whatever else finds them."""
    if any(isinstance(finder, CachedSourceFinder) for finder in sys.meta_path):
        return
    for index, finder in enumerate(sys.meta_path):
        if type(finder).__name__ == ANSIBLE_FINDER:
            sys.meta_path.insert(index, CachedSourceFinder())
            return
