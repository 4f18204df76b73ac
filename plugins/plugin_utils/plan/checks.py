"""Checks of one value each: the value back (a survey's string converted), or PlanError naming the
variable, the value and what is allowed. They know nothing of which variable is which."""

from __future__ import annotations

import functools
import ipaddress
import re
from collections.abc import Callable, Mapping
from typing import Any

_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
_RESOURCE_NAME = re.compile(r"^[A-Za-z0-9]([-A-Za-z0-9_.]*[A-Za-z0-9])?$")
_INTERFACE = re.compile(r"^[A-Za-z0-9_.-]{1,15}$")


class PlanError(ValueError):
    """A bad input: which variable, what arrived, what is allowed. A secret's value is never
    repeated: `shown` then says what arrived instead (its type, that it is empty)."""

    def __init__(self, variable: str, value: Any, expected: str, shown: str | None = None):
        self.variable = variable
        self.value = value if shown is None else shown
        self.expected = expected
        super().__init__(f"{variable}: got {shown or repr(value)}; expected {expected}")


def choice(name: str, value: Any, choices: tuple) -> Any:
    if value not in choices:
        raise PlanError(name, value, "one of " + ", ".join(map(str, choices)))
    return value


def known_keys(where: str, given: Mapping, allowed: tuple, what: str = "key") -> None:
    unknown = sorted(set(given) - set(allowed))
    if unknown:
        raise PlanError(
            f"{where}.{unknown[0]}",
            given[unknown[0]],
            f"no such {what}; allowed: " + ", ".join(allowed),
        )


def _between(low: str, high: str | None) -> str:
    return f"of {low} or more" if high is None else f"from {low} to {high}"


def minor_version(version: str) -> tuple[int, int]:
    """(major, minor) of a release or OpenShift version: 26.7.0-1 -> (26, 7), 4.22 -> (4, 22)."""
    major, minor = version.split("-", maxsplit=1)[0].split(".")[:2]
    return int(major), int(minor)


def check_integer(name: str, value: Any, low: int, high: int | None, why: str = "") -> int:
    """value as a whole number from low to high (no upper bound when high is None), or
    PlanError naming name."""
    expected = f"a whole number {_between(str(low), None if high is None else str(high))}"
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, str) and value.strip().isdigit():
            value = int(value.strip())
        else:
            raise PlanError(name, value, expected)
    if not low <= value <= (value if high is None else high):
        raise PlanError(name, value, expected + why)
    return value


def check_number(name: str, value: Any, low: float, high: float | None, unit: str) -> float:
    """value as a number of unit from low to high (no upper bound when high is None), or
    PlanError naming name."""
    expected = f"a number of {unit} {_between(f'{low:g}', None if high is None else f'{high:g}')}"
    number = value
    if isinstance(value, str):
        try:
            number = float(value.strip())
        except ValueError:
            raise PlanError(name, value, expected) from None
    if (
        isinstance(number, bool)
        or not isinstance(number, (int, float))
        or not low <= number <= (number if high is None else high)
    ):
        raise PlanError(name, value, expected)
    return number


def boolean(name: str, value: Any) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "yes", "false", "no"):
        return value.lower() in ("true", "yes")
    raise PlanError(name, value, "true or false")


def string(name: str, value: Any, pattern=None, expected: str = "", max_length: int = 253) -> str:
    if not isinstance(value, str) or not value:
        raise PlanError(name, value, expected or "a non-empty string")
    if len(value) > max_length or (pattern is not None and not pattern.match(value)):
        raise PlanError(name, value, expected)
    return value


dns_label = functools.partial(
    string,
    pattern=_DNS_LABEL,
    expected="a DNS-1123 label: lower-case letters, digits and '-', at most 63 characters",
    max_length=63,
)
dns_subdomain = functools.partial(
    string,
    pattern=_DNS_SUBDOMAIN,
    expected="a DNS-1123 name: lower-case letters, digits, '-' and '.', at most 253 characters",
)
resource_name = functools.partial(
    string,
    pattern=_RESOURCE_NAME,
    expected="a resource name: letters, digits, '-', '_' and '.', starting and ending with a "
    "letter or digit, at most 63 characters",
    max_length=63,
)


def items(value: str) -> list[str]:
    """A list given as one string, the form an AAP survey's text answer has: items separated by
    commas or white space. No CIDR or Secret name holds either; an interface name never holds
    white space, and one with a comma (the kernel allows it) has to be given in a YAML list."""
    return [item for item in re.split(r"[,\s]+", value) if item]


def as_list(name: str, value: Any) -> list:
    if value is None:
        return []
    if isinstance(value, str):
        return items(value)
    if not isinstance(value, (list, tuple)):
        raise PlanError(name, value, "a list")
    return list(value)


def mapping(name: str, value: Any) -> Mapping:
    if value is None:
        return {}
    if not isinstance(value, Mapping):
        raise PlanError(name, value, "a mapping")
    return value


def interface_name(name: str, value: Any) -> str:
    """A network interface name: what the Linux kernel accepts (dev_valid_name: at most 15
    characters, not '.' or '..'), narrowed to the characters of every naming scheme in use
    (ens8f0np0, enp65s0f1, ibs2f0, eth0, bond0.100). The operators read others: '#' selects VFs in
    the SR-IOV operator's pfNames, ',' separates names in a survey answer; brackets and quotes are
    a YAML list typed into a text answer."""
    expected = (
        "a Linux interface name: 1 to 15 characters, letters, digits, '-', '_' and '.' only "
        "(no '/', ':', '#', quotes, brackets or white space), not '.' or '..', e.g. ens8f0np0"
    )
    if not isinstance(value, str) or value in (".", "..") or not _INTERFACE.match(value):
        raise PlanError(name, value, expected)
    return value


def cidr(name: str, value: Any) -> ipaddress.IPv4Interface | ipaddress.IPv6Interface:
    expected = "an IP range in CIDR notation, e.g. 192.168.2.0/24"
    if not isinstance(value, str) or "/" not in value:
        raise PlanError(name, value, expected)
    try:
        return ipaddress.ip_interface(value)
    except ValueError:
        raise PlanError(name, value, expected) from None


def address(name: str, value: Any) -> ipaddress.IPv4Address | ipaddress.IPv6Address:
    try:
        return ipaddress.ip_address(value)
    except ValueError:
        raise PlanError(name, value, "an IP address, e.g. 192.168.2.1") from None


def each(check: Callable) -> Callable:
    """The check of every item of a list (or of a survey's string of items)."""
    return lambda name, value: [
        check(f"{name}[{index}]", item) for index, item in enumerate(as_list(name, value))
    ]


def whole(low: int, high: int | None, why: str = "") -> Callable:
    return functools.partial(check_integer, low=low, high=high, why=why)


_BY_TYPE = {"bool": boolean, "int": whole(0, None), "list": as_list, "dict": mapping, "str": string}


def declared(name: str, value: Any, option: Mapping, rule: Callable | None = None) -> Any:
    """value as its declaration allows (one of its choices, else its type), or as the rule that
    says more (a range, a form) allows."""
    if "choices" in option and option.get("type") == "list":  # each item one of them
        choices = tuple(option["choices"])
        if not isinstance(value, (str, list, tuple)) and value is not None:
            raise PlanError(name, value, "a list of " + ", ".join(map(str, choices)))
        return list(dict.fromkeys(each(lambda n, v: choice(n, v, choices))(name, value)))
    if "choices" in option:
        return choice(name, value, tuple(option["choices"]))
    return (rule or _BY_TYPE.get(option.get("type"), lambda _name, given: given))(name, value)
