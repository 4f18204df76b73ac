"""CR builders: pure functions from a plan (see plugin_utils/plan.py) to new Kubernetes objects.

No I/O and no mutation: every function returns new dicts. Each object carries the ownership
labels of common.py, and its `gpudirect.rdma/component` label names the step (and the rendered
folder) it belongs to. Which builders make which step, and in what order, is the step table's
(module_utils/steps.py).
"""
