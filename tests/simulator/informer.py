"""The simulator's reads from watches, as a real controller reads from its informers' caches.

A controller of the simulator lists what it looks after every tick; asked of the API server, the
lists of one tick cost it about forty requests, and the ticks of four control planes were most
of the API servers' CPU in a test run. WatchingApiClient is a kubernetes ApiClient that answers
those reads itself:

- the first read of a collection (a list, or a get of one of its objects: every object of the
  kind, `/api/v1/pods` or `/apis/<group>/<version>/<plural>`, all namespaces, is listed) goes to
  the API server, and a watch from its resourceVersion keeps a copy of the collection from then
  on (a thread per collection);
- later lists of it, all namespaces or one, with a label selector or a `metadata.name` or
  `metadata.namespace` field selector, and reads of one of its objects, are answered from the
  copy, in the API server's JSON, so the typed and the dynamic clients parse them as before;
- what the simulator writes goes to the API server, and the object it answers goes into the
  copy at once (a deletion's answer without deletionTimestamp takes the object out), so the next
  tick sees its own writes; what others write arrives by the watch, usually within
  milliseconds, and wakes the loop (`changed`);
- anything else (logs, subresources, a paged or protobuf list, a selector it does not know, a
  collection whose watch broke and is not listed again yet, a kind not served) goes to the API
  server as before.

Like an informer's cache it may be behind for a moment: a tick can act on a copy one watch event
old. The simulator's controllers already take a conflict (409) or a missing object (404) as "try
again next tick", as a real controller does.
"""

from __future__ import annotations

import json
import logging
import re
import threading
from dataclasses import dataclass, field
from urllib.parse import parse_qs, urlsplit

import urllib3
from kubernetes import client
from kubernetes.client import rest

log = logging.getLogger("simulator.informer")

# /api/v1[/namespaces/<ns>]/<plural>[/<name>], and the same under /apis/<group>/<version>
_PATH = re.compile(
    r"^/(?P<prefix>api/v1|apis/[^/]+/[^/]+)"
    r"(?:/namespaces/(?P<namespace>[^/]+))?/(?P<plural>[^/]+)(?:/(?P<name>[^/]+))?$"
)
_SET = re.compile(r"^\s*([^\s!=]+)\s+(in|notin)\s+\((.*)\)\s*$")
_JSON = "application/json"
_METADATA = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"


@dataclass
class Collection:
    """One kind's objects in every namespace, as its watch last told them."""

    prefix: str
    plural: str
    kind: str = ""
    resource_version: str = "0"
    objects: dict = field(default_factory=dict)  # (namespace, name) -> object
    # (namespace, name) -> the resourceVersion it was deleted at: an answer to a write that
    # arrives after the watch told of the deletion must not bring the object back.
    gone: dict = field(default_factory=dict)
    synced: bool = False
    lock: threading.Lock = field(default_factory=threading.Lock)
    # (namespace, name) -> the object as JSON, made at its first copy after each change.
    serialized: dict = field(default_factory=dict)

    def copies(self) -> list[dict]:
        """Every object, each a copy of its own (its JSON parsed again: cheaper than deepcopy,
        and an unchanged object is serialized once), in the order a list gives them."""
        with self.lock:
            texts = []
            for key in sorted(self.objects):
                text = self.serialized.get(key)
                if text is None:
                    text = self.serialized[key] = json.dumps(self.objects[key])
                texts.append(text)
        return [json.loads(text) for text in texts]

    def put(self, obj: dict) -> None:
        """Keep obj unless the copy holds a newer version of it, or it was deleted since."""
        metadata = obj.get("metadata") or {}
        key = (metadata.get("namespace") or "", metadata.get("name"))
        version = _version(obj)
        with self.lock:
            if version <= self.gone.get(key, -1):
                return
            known = self.objects.get(key)
            if known is None or version >= _version(known):
                self.objects[key] = obj
                self.serialized.pop(key, None)
                self.gone.pop(key, None)

    def drop(self, obj: dict) -> None:
        metadata = obj.get("metadata") or {}
        key = (metadata.get("namespace") or "", metadata.get("name"))
        version = _version(obj)
        with self.lock:
            known = self.objects.get(key)
            if known is None or version >= _version(known):
                self.objects.pop(key, None)
                self.serialized.pop(key, None)
                self.gone[key] = max(version, self.gone.get(key, -1))


def _version(obj: dict) -> int:
    try:
        return int((obj.get("metadata") or {}).get("resourceVersion") or 0)
    except ValueError:
        return 0


def _selected(labels: dict, selector: str) -> bool | None:
    """Whether labels match a label selector; None when it has a form not understood here."""
    for requirement in _split(selector):
        found = _SET.match(requirement)
        if found:
            key, operator, values = found[1], found[2], {v.strip() for v in found[3].split(",")}
            if (labels.get(key) in values) != (operator == "in") or (
                operator == "in" and key not in labels
            ):
                return False
            continue
        if requirement.startswith("!"):
            if requirement[1:].strip() in labels:
                return False
        elif "!=" in requirement:
            key, value = (part.strip() for part in requirement.split("!=", 1))
            if labels.get(key) == value:
                return False
        elif "=" in requirement:
            key, value = (part.strip() for part in requirement.replace("==", "=").split("=", 1))
            if labels.get(key) != value:
                return False
        elif re.fullmatch(r"[\w./-]+", requirement.strip()):
            if requirement.strip() not in labels:
                return False
        else:
            return None
    return True


def _split(selector: str) -> list[str]:
    """A selector's requirements: commas split them, except inside a set's parentheses."""
    parts, depth, current = [], 0, ""
    for char in selector:
        depth += char == "("
        depth -= char == ")"
        if char == "," and depth == 0:
            parts.append(current)
            current = ""
        else:
            current += char
    if current.strip():
        parts.append(current)
    return [p for p in parts if p.strip()]


def _fields(obj: dict, selector: str) -> bool | None:
    metadata = obj.get("metadata") or {}
    for requirement in _split(selector):
        key, equals, value = requirement.replace("==", "=").partition("=")
        if not equals or key.endswith("!"):
            return None
        known = {
            "metadata.name": metadata.get("name"),
            "metadata.namespace": metadata.get("namespace"),
        }
        if key.strip() not in known:
            return None
        if known[key.strip()] != value.strip():
            return False
    return True


def _answer(status: int, body: dict) -> rest.RESTResponse:
    data = json.dumps(body).encode()
    response = urllib3.response.HTTPResponse(
        body=data,
        headers={"Content-Type": _JSON},
        status=status,
        reason="OK" if status == 200 else "Not Found",
        preload_content=True,
    )
    answer = rest.RESTResponse(response)
    answer.read()
    return answer


class WatchingApiClient(client.ApiClient):
    """An ApiClient that answers lists and reads of the collections it watches from their copies
    (see the module's description); `changed` is set whenever a watch brings news."""

    def __init__(self, configuration):
        # A watch per collection holds a connection of its own for as long as it runs.
        configuration.connection_pool_maxsize = max(configuration.connection_pool_maxsize, 96)
        super().__init__(configuration)
        self.changed = threading.Event()
        self.events = 0  # every change a watch brought, counted: the loop ticks when it moves
        self._collections: dict[tuple[str, str], Collection] = {}
        self._lock = threading.Lock()
        self._stop = threading.Event()

    def close(self) -> None:
        self._stop.set()
        super().close()

    def call_api(
        self, method, url, header_params=None, body=None, post_params=None, _request_timeout=None
    ):
        parts = urlsplit(url)
        found = _PATH.match(parts.path)
        if method == "GET" and found:
            answer = self._from_copy(found, parse_qs(parts.query), header_params or {})
            if answer is not None:
                return answer
        response = super().call_api(method, url, header_params, body, post_params, _request_timeout)
        if found and method in ("POST", "PUT", "PATCH", "DELETE") and 200 <= response.status < 300:
            self._written(found, method, response)
        return response

    def objects(self, prefix: str, plural: str) -> list[dict] | None:
        """Every object of a kind in all namespaces, straight from the watched copy (started
        here when it is not yet): no HTTP answer made up and parsed again, none of the client's
        checks of its arguments, which were most of a tick's CPU. None when there is no synced
        copy (a kind not served, a broken watch): the caller asks the API server."""
        collection = self._collection((prefix, plural))
        if collection is None or not collection.synced:
            return None
        return collection.copies()

    def _from_copy(self, found, query: dict, headers: dict) -> rest.RESTResponse | None:
        accept = headers.get("Accept", _JSON)
        if accept not in (_JSON, _METADATA) or set(query) - {"labelSelector", "fieldSelector"}:
            return None
        collection = self._collection((found["prefix"], found["plural"]))
        if collection is None or not collection.synced:
            return None
        namespace, name = found["namespace"] or "", found["name"]
        with collection.lock:
            objects = list(collection.objects.values())
            version = collection.resource_version
            obj = collection.objects.get((namespace, name))
        if name is not None:
            if query:
                return None
            if obj is None:
                return _answer(
                    404,
                    {
                        "kind": "Status",
                        "apiVersion": "v1",
                        "status": "Failure",
                        "reason": "NotFound",
                        "code": 404,
                        "message": f'{found["plural"]} "{name}" not found',
                    },
                )
            return _answer(200, obj)
        chosen = []
        for obj in objects:
            if namespace and (obj["metadata"].get("namespace") or "") != namespace:
                continue
            verdicts = [
                _selected(obj["metadata"].get("labels") or {}, query["labelSelector"][0])
                if "labelSelector" in query
                else True,
                _fields(obj, query["fieldSelector"][0]) if "fieldSelector" in query else True,
            ]
            if None in verdicts:
                return None
            if all(verdicts):
                chosen.append(obj)
        chosen.sort(key=lambda o: (o["metadata"].get("namespace") or "", o["metadata"]["name"]))
        if accept == _METADATA:
            return _answer(
                200,
                {
                    "kind": "PartialObjectMetadataList",
                    "apiVersion": "meta.k8s.io/v1",
                    "metadata": {"resourceVersion": version},
                    "items": [
                        {
                            "kind": "PartialObjectMetadata",
                            "apiVersion": "meta.k8s.io/v1",
                            "metadata": o["metadata"],
                        }
                        for o in chosen
                    ],
                },
            )
        return _answer(
            200,
            {
                "kind": collection.kind or "List",
                "apiVersion": found["prefix"].removeprefix("apis/").removeprefix("api/"),
                "metadata": {"resourceVersion": version},
                "items": chosen,
            },
        )

    def _collection(self, key: tuple[str, str]) -> Collection | None:
        """The copy of a collection, started at its first read: listed in every namespace
        (whatever the read asked for) from the API server, kept, and watched from then on. None
        while the kind is not served: asked again next time."""
        known = self._collections.get(key)
        if known is not None:
            return known
        prefix, plural = key
        try:
            listed = self._list(f"/{prefix}/{plural}")
        except client.ApiException as error:
            if error.status == 404:
                return None
            raise
        collection = Collection(prefix, plural)
        self._fill(collection, listed)
        with self._lock:
            known = self._collections.setdefault(key, collection)
        if known is collection:
            threading.Thread(
                target=self._watch, args=(collection,), name=f"watch {plural}", daemon=True
            ).start()
        return known

    def _list(self, path: str) -> dict:
        method, url, headers, body, _post = self.param_serialize(
            "GET", path, header_params={"Accept": _JSON}, auth_settings=["BearerToken"]
        )
        response = super().call_api(method, url, header_params=headers, body=body)
        response.read()
        if not 200 <= response.status < 300:
            raise client.ApiException(http_resp=response)
        return json.loads(response.data)

    def _fill(self, collection: Collection, listed: dict) -> None:
        kind = (listed.get("kind") or "").removesuffix("List")
        api_version = listed.get("apiVersion") or ""
        with collection.lock:
            collection.objects = {}
            collection.serialized = {}
            collection.gone = {}
            for item in listed.get("items") or []:
                item.setdefault("kind", kind)
                item.setdefault("apiVersion", api_version)
                metadata = item["metadata"]
                collection.objects[(metadata.get("namespace") or "", metadata["name"])] = item
            collection.kind = listed.get("kind") or ""
            collection.resource_version = listed["metadata"]["resourceVersion"]
            collection.synced = True

    def _written(self, found, method: str, response: rest.RESTResponse) -> None:
        collection = self._collections.get((found["prefix"], found["plural"]))
        if collection is None or not collection.synced:
            return
        try:
            obj = json.loads(response.read())
        except ValueError:
            return
        if not isinstance(obj, dict) or obj.get("kind") == "Status" or "metadata" not in obj:
            if method == "DELETE" and found["name"]:
                with collection.lock:
                    collection.objects.pop((found["namespace"] or "", found["name"]), None)
            return
        if method == "DELETE" and not obj["metadata"].get("deletionTimestamp"):
            collection.drop(obj)
        else:
            collection.put(obj)

    def _watch(self, collection: Collection) -> None:
        path = f"/{collection.prefix}/{collection.plural}"
        while not self._stop.is_set():
            try:
                self._follow(collection, path)
            except Exception as error:  # the watch must outlive the API server
                log.debug("watch %s: %s", path, error)
            if self._stop.is_set():
                return
            collection.synced = False
            self._stop.wait(0.5)
            try:
                self._fill(collection, self._list(path))
                self._news()
            except Exception as error:  # tried again after the next pause
                log.debug("list %s: %s", path, error)

    def _follow(self, collection: Collection, path: str) -> None:
        """Apply the watch's events to the copy until the stream ends (the server's timeout, an
        expired resourceVersion: the caller lists again)."""
        method, url, headers, _body, _post = self.param_serialize(
            "GET",
            path,
            query_params=[
                ("watch", "true"),
                ("resourceVersion", collection.resource_version),
                ("allowWatchBookmarks", "true"),
                ("timeoutSeconds", "600"),
            ],
            header_params={"Accept": _JSON},
            auth_settings=["BearerToken"],
        )
        stream = self.rest_client.pool_manager.request(
            method,
            url,
            headers=headers,
            preload_content=False,
            timeout=urllib3.Timeout(connect=5.0, read=None),
        )
        try:
            if stream.status != 200:
                return
            pending = b""
            for chunk in stream.stream(64 * 1024, decode_content=True):
                pending += chunk
                *lines, pending = pending.split(b"\n")
                for line in lines:
                    if line.strip() and not self._event(collection, json.loads(line)):
                        return
                if self._stop.is_set():
                    return
        finally:
            stream.release_conn()

    def _event(self, collection: Collection, event: dict) -> bool:
        """Apply one watch event; False when the watch must start again from a new list."""
        kind, obj = event.get("type"), event.get("object") or {}
        if kind == "ERROR":
            return False
        version = (obj.get("metadata") or {}).get("resourceVersion")
        if kind == "BOOKMARK":
            collection.resource_version = version or collection.resource_version
            return True
        if kind == "DELETED":
            collection.drop(obj)
        else:
            collection.put(obj)
        if version:
            collection.resource_version = version
        self._news()
        return True

    def _news(self) -> None:
        self.events += 1
        self.changed.set()
