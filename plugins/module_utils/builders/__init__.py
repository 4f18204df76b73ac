"""CR builders: pure functions from a plan (see plugin_utils/plan/) to new Kubernetes objects.

No I/O and no mutation: every function returns new dicts, each carrying the collection's
managed-by label (common.py). Which builders make which step, and in what order, is the step
table's (module_utils/steps/, a file per step); the step labels its objects with its component
(`gpudirect.rdma/component`, also the folder of the rendered tree).
"""
