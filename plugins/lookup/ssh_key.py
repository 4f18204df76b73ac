"""gpudirect.rdma.ssh_key: a new SSH key for one run of the NCCL test."""

from __future__ import annotations

DOCUMENTATION = r"""
name: ssh_key
author: gpudirect.rdma maintainers (!UNKNOWN)
version_added: 0.1.0
short_description: A new Ed25519 SSH private key, in OpenSSH form
description:
  - Generates a new, unencrypted Ed25519 private key on the controller (with the Python
    C(cryptography) library that ansible-core needs anyway) and returns it in OpenSSH form.
    Nothing is written to disk.
  - The verify role makes one per NCCL test run; the key lives in the test's Secret for as long
    as its pods do. Keep the task that holds it C(no_log).
options: {}
"""

EXAMPLES = r"""
- name: A key for the NCCL test's launcher and workers
  ansible.builtin.set_fact:
    nccl_key: "{{ lookup('gpudirect.rdma.ssh_key') }}"
  no_log: true
"""

RETURN = r"""
_raw:
  description: One private key (C(-----BEGIN OPENSSH PRIVATE KEY-----) ...).
  type: list
  elements: str
"""

from ansible.errors import AnsibleLookupError  # noqa: E402
from ansible.plugins.lookup import LookupBase  # noqa: E402


class LookupModule(LookupBase):
    def run(self, terms, variables=None, **kwargs):
        if terms or kwargs:
            raise AnsibleLookupError(
                f"gpudirect.rdma.ssh_key: expected no terms and no options; got {terms!r} "
                f"{kwargs!r}"
            )
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import ed25519

        key = ed25519.Ed25519PrivateKey.generate()
        return [
            key.private_bytes(
                serialization.Encoding.PEM,
                serialization.PrivateFormat.OpenSSH,
                serialization.NoEncryption(),
            ).decode()
        ]
