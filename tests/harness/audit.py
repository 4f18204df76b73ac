"""Read the API server's audit log: which requests a run made, and how many of them wrote."""

from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path

WRITE_VERBS = frozenset({"create", "update", "patch", "delete", "deletecollection"})


@dataclass(frozen=True)
class Request:
    user: str
    verb: str
    uri: str
    resource: str
    namespace: str
    name: str
    code: int
    dry_run: bool

    @property
    def is_write(self) -> bool:
        """A request that changed, or could have changed, stored state."""
        return self.verb in WRITE_VERBS and not self.dry_run

    def __str__(self) -> str:
        where = "/".join(part for part in (self.namespace, self.resource, self.name) if part)
        return f"{self.user} {self.verb} {where or self.uri} -> {self.code}"


def _request(event: dict) -> Request:
    ref = event.get("objectRef") or {}
    resource = ref.get("resource", "")
    if ref.get("subresource"):
        resource = f"{resource}/{ref['subresource']}"
    uri = event.get("requestURI", "")
    return Request(
        user=event.get("user", {}).get("username", ""),
        verb=event.get("verb", ""),
        uri=uri,
        resource=resource,
        namespace=ref.get("namespace", ""),
        name=ref.get("name", ""),
        code=(event.get("responseStatus") or {}).get("code", 0),
        dry_run="dryRun=All" in uri,
    )


class AuditLog:
    """A view of an audit log file from a mark on: mark() before a run, requests() after it."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self._offset = 0

    def mark(self) -> AuditLog:
        self._offset = self.path.stat().st_size if self.path.exists() else 0
        return self

    def requests(self, user: str | None = None) -> list[Request]:
        """The completed requests since the mark, by user when one is named."""
        if not self.path.exists():
            return []
        if self.path.stat().st_size < self._offset:
            raise RuntimeError(f"{self.path} was rotated since mark(): requests are lost")
        with self.path.open("rb") as log:
            log.seek(self._offset)
            text = log.read()
        # The API server may be writing an event now: a line without its newline is not whole.
        lines = text[: text.rfind(b"\n") + 1].splitlines()
        found = []
        for line in lines:
            event = json.loads(line)
            if event.get("stage") != "ResponseComplete":
                continue
            request = _request(event)
            if user is None or request.user == user:
                found.append(request)
        return found

    def writes(self, user: str | None = None) -> list[Request]:
        return [r for r in self.requests(user) if r.is_write]
