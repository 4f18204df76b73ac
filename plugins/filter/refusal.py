"""gpudirect.rdma.refusal: a kubernetes.core module's failure message, with the collection's words
for an RBAC refusal."""

from __future__ import annotations

DOCUMENTATION = r"""
name: refusal
author: gpudirect.rdma maintainers (!UNKNOWN)
version_added: 0.1.0
short_description: Say who may not do what, when a kubernetes.core module was refused (403)
description:
  - Takes the C(msg) of a failed kubernetes.core module (M(kubernetes.core.k8s_info),
    M(kubernetes.core.k8s_log), ...). When the API server's answer in it is an RBAC refusal, returns
    the message the collection's own modules give for one - the user, the verb, the resource and
    where, and the ClusterRole and Role that C(rbac/gpudirect-rdma-installer.yaml) ships for it;
    any other message comes back unchanged.
options:
  _input:
    description: The failure message.
    type: str
    required: true
"""

EXAMPLES = r"""
- name: Fail with who may not do what
  ansible.builtin.fail:
    msg: "{{ ansible_failed_result.msg | gpudirect.rdma.refusal }}"
"""

RETURN = r"""
_value:
  description: The message, in the collection's words for an RBAC refusal.
  type: str
"""

import json  # noqa: E402
import re  # noqa: E402

from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.client import (  # noqa: E402
    Forbidden,
)

# The Status the API server answered with, as the kubernetes client prints it in its error.
_BODY = re.compile(r"HTTP response body: (\{.*?\})(?:\s|$)", re.S)


class _Answer:
    """The API server's answer, as client.Forbidden reads one."""

    def __init__(self, body: str):
        self.body, self.reason = body, "Forbidden"


def refusal(message):
    found = _BODY.search(str(message or ""))
    if not found:
        return message
    try:
        status = json.loads(found.group(1))
    except ValueError:
        return message
    if status.get("code") != 403:
        return message
    explained = Forbidden(_Answer(found.group(1)))
    return str(explained) if explained.user else message


class FilterModule:
    def filters(self):
        return {"refusal": refusal}
