"""The GPUDirect bandwidth test: a server pod and a client pod per node group, and the report.

Each pod holds a whole node's worth of the test: it asks for the GPUs it may choose from (by
default all the node advertises) and one of each rail's RDMA resource, attaches every rail's
network, may lock memory (IPC_LOCK), and runs verify_test.sh (in plugins/plugin_utils). For each
rail the script finds the RDMA device and GID index behind the interface and the GPU closest to
that device on the PCIe tree (`nvidia-smi topo -m`), runs one ib_write_bw per rail, all at once,
and prints the matrix and each rail's output between markers. The client gets the servers'
addresses, one per rail. With node groups, each group is tested between two of its own nodes, on
its own rails and networks: the pods carry the group's name, and the report one pair per rail of
every group.

One module per concern: pods.py (the pods, their labels, the nodes that can run them), log.py
(what a pod prints, taken apart), judge.py (the pairs judged, the report), tables.py (the report
as the terminal shows it).
"""
