"""templated(): play variables templated only when templating could change them."""

from __future__ import annotations

from unittest import mock

import pytest

from ansible_collections.gpudirect.rdma.plugins.plugin_utils.variables import templated


def templar():
    return mock.MagicMock(template=mock.MagicMock(return_value="TEMPLATED"))


@pytest.mark.parametrize(
    "value",
    [
        "plain",
        "a { brace } and {} and a dict's {",
        42,
        None,
        True,
        [{"mac": "b8:3f:d2:3b:51:29", "name": "ens8f0np0"}] * 3,
        {"nested": {"list": [1, 2.5, "x"], "empty": {}}, "next": [{}, {"a": {"b": {}}}]},
    ],
)
def test_plain_data_is_returned_as_it_is(value):
    t = templar()
    assert templated(t, value) is value
    t.template.assert_not_called()


class Vaulted:
    """Not plain data: something only the templar knows how to turn into a value."""


@pytest.mark.parametrize(
    "value",
    [
        "{{ other }}",
        "x{#comment#}",
        ["a", {"deep": ["{% if x %}y{% endif %}"]}],
        {"{{ key }}": "value"},
        {"secret": Vaulted()},
    ],
)
def test_anything_templating_could_change_goes_to_the_templar(value):
    t = templar()
    assert templated(t, value) == "TEMPLATED"
    t.template.assert_called_once_with(value)
