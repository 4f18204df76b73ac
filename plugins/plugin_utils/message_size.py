"""NCCL message sizes as nccl-tests takes them (-b/-e): bytes, or a whole number with K, M or G.
Apart from the NCCL test so that the plan can check the sizes without importing the test."""

from __future__ import annotations

import re

MESSAGE_SIZE = re.compile(r"^([1-9][0-9]*)([KMG]?)$")


def bytes_of(size: str) -> int:
    """size (matching MESSAGE_SIZE, upper case) in bytes."""
    number, unit = MESSAGE_SIZE.match(size).groups()
    return int(number) * {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}[unit]
