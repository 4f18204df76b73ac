"""The YAML the collection declares itself (the roles' argument specs, the modules' and filters'
DOCUMENTATION), parsed once and kept as Python keeps bytecode.

Every ansible-playbook run parsed about 90,000 characters of it again: the sixteen roles'
meta/argument_specs.yml alone took 35 ms of a converged site.yml run of 0.74 s, more than the
rest of the plan. load() keeps each parsed text as a marshal file in plugins/__pycache__/yaml/,
named by the digest of the text and the interpreter's cache tag, so that a changed text is
parsed anew and nothing needs invalidating. Like Python's bytecode cache, it writes nothing when
PYTHONDONTWRITEBYTECODE is set or the folder is read-only, and then parses as before. A value
marshal cannot keep (a YAML date) is parsed every time.
"""

from __future__ import annotations

import hashlib
import marshal
import os
import sys
import tempfile
from pathlib import Path

from ansible.module_utils.common.yaml import yaml_load

CACHE = Path(__file__).resolve().parents[1] / "__pycache__" / "yaml"
# marshal's format follows the interpreter, as the .pyc files' names do.
_TAG = (sys.implementation.cache_tag or "python").encode()
# The marshalled bytes of each text seen in this process; each load returns a copy of its own.
_kept: dict[str, bytes] = {}


def load(text: str):
    """yaml_load(text), from the cache when it holds the text."""
    # The files are trusted as the .pyc files beside the collection's code are: same folder.
    kept = _kept.get(text)
    if kept is not None:
        return marshal.loads(kept)  # noqa: S302
    path = CACHE / (hashlib.sha256(_TAG + b"\0" + text.encode()).hexdigest()[:40] + ".marshal")
    try:
        kept = path.read_bytes()
        value = marshal.loads(kept)  # noqa: S302
    except (OSError, EOFError, ValueError, TypeError):
        value = yaml_load(text)
        try:
            kept = marshal.dumps(value)
        except ValueError:  # a type marshal does not keep
            return value
        _write(path, kept)
    _kept[text] = kept
    return value


def _write(path: Path, data: bytes) -> None:
    """The file written whole (a reader never sees half of it), unless writing is off or the
    folder cannot be written: then nothing."""
    if sys.dont_write_bytecode:
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        handle, temporary = tempfile.mkstemp(dir=path.parent, suffix=".tmp")
        try:
            with os.fdopen(handle, "wb") as file:
                file.write(data)
            os.replace(temporary, path)
        except BaseException:
            os.unlink(temporary)
            raise
    except OSError:
        return
