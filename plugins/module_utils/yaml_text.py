"""YAML as the collection writes it for people and Git (block style, keys in their order, lists
indented, multi-line strings as literal blocks): the rendered tree and the diagnostics archive."""

from __future__ import annotations

import json
import re

try:
    import yaml

    HAS_YAML = True
except ImportError:  # pragma: no cover
    HAS_YAML = False

# A long plain scalar on one line (a MachineConfig's data URL: 1 MB for 8,000 persistent NIC
# names), which PyYAML's emitter would analyse and write one character at a time.
_LONG_PLAIN = re.compile(r"[A-Za-z0-9][A-Za-z0-9+/=:;,._-]*(?<!:)")
_LONG = 256


class _Dumper(yaml.SafeDumper if HAS_YAML else object):
    """Keys in their order, list items indented under their key (as yamllint wants), `|`."""

    def increase_indent(self, flow=False, indentless=False):
        return super().increase_indent(flow, False)

    def analyze_scalar(self, scalar):
        """PyYAML's analysis, at once for a long plain string ("," and ":" are flow indicators)."""
        if len(scalar) < _LONG or not _LONG_PLAIN.fullmatch(scalar):
            return super().analyze_scalar(scalar)
        return yaml.emitter.ScalarAnalysis(
            scalar=scalar,
            empty=False,
            multiline=False,
            allow_flow_plain="," not in scalar and ":" not in scalar,
            allow_block_plain=True,
            allow_single_quoted=True,
            allow_double_quoted=True,
            allow_block=True,
        )

    def write_plain(self, text, split=True):
        """PyYAML's write_plain, in one piece for a long plain string (no spaces, no breaks)."""
        if len(text) < _LONG or not _LONG_PLAIN.fullmatch(text):
            return super().write_plain(text, split)
        if self.root_context:
            self.open_ended = True
        data = text if self.whitespace else f" {text}"
        self.whitespace = False
        self.indention = False
        self.column += len(data)
        self.stream.write(data.encode(self.encoding) if self.encoding else data)
        return None


def _string(dumper: yaml.SafeDumper, value: str):
    style = "|" if "\n" in value and not value.startswith((" ", "\t")) else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


if HAS_YAML:
    _Dumper.add_representer(str, _string)


def to_yaml(document) -> str:
    if not HAS_YAML:  # pragma: no cover - a module's Python without PyYAML; JSON is YAML too
        return json.dumps(document, indent=2, default=str) + "\n"
    return yaml.dump(
        document,
        Dumper=_Dumper,
        sort_keys=False,
        default_flow_style=False,
        width=1000,
        allow_unicode=True,
    )
