# The collection's modules load through Python's bytecode cache from here on (bytecode_cache.py).
from ansible_collections.gpudirect.rdma.plugins.module_utils.bytecode_cache import install

install()
