"""The Network Operator's two policy webhooks, served over HTTPS to the real API server.

Upstream (network-operator v26.4.1, api/v1alpha1/validator/nicpolicy_webhook.go) the operator
serves `vnicclusterpolicy.kb.io` and `vnicnodepolicy.kb.io`; OLM registers them from the CSV's
webhookdefinitions once the CSV has installed. Here the simulator serves the same paths and its
OLM registers a ValidatingWebhookConfiguration for each definition of the installed CSV that it
serves (see olm.WebhookRegistrar), so the API server calls them on every CREATE and UPDATE, dry
runs included, exactly as on a cluster. The rules played:

- NicNodePolicy: the name is at most 30 characters; a DOCA driver version has one of the forms
  the operator takes; none of the three shared sections (ofedDriver, rdmaSharedDevicePlugin,
  sriovDevicePlugin) is one the NicClusterPolicy defines; no node is selected by two
  NicNodePolicies (the incoming spec counted in place of the stored one).
- NicClusterPolicy: a DOCA driver version of a form the operator takes (the rule of v26.7.x,
  unchanged since v26.1); none of the shared sections is one a NicNodePolicy defines.
- Deletes are not validated, and a webhook that cannot list what it compares with admits the
  object (upstream fails open there too).
Device-plugin config schemas are not checked.
"""

from __future__ import annotations

import base64
import json
import logging
import re
import ssl
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from kubernetes import client
from kubernetes.client.rest import ApiException

from tests.simulator.core import selector_matches

log = logging.getLogger("simulator.admission")

SHARED_SECTIONS = ("ofedDriver", "rdmaSharedDevicePlugin", "sriovDevicePlugin")
MAX_NIC_NODE_POLICY_NAME = 30
NIC_CLUSTER_POLICY_PATH = "/validate-mellanox-com-v1alpha1-nicclusterpolicy"
NIC_NODE_POLICY_PATH = "/validate-mellanox-com-v1alpha1-nicnodepolicy"
SERVED_PATHS = (NIC_CLUSTER_POLICY_PATH, NIC_NODE_POLICY_PATH)

# isValidOFEDVersion (v26.7.x nicpolicy_webhook.go; the same since 2025-10-26): an image digest;
# a DOCA release, docaX.Y[.Z]-YY.MM- then exactly four dotted numbers and -N (a fifth number,
# doca3.3.1-26.01-1.0.0.0.305-0, is refused), with any -suffix (a precompiled kernel's); or a
# release without the prefix (24.10-0.7.0.0-0), whose dotted numbers are not counted.
_OFED_VERSION = re.compile(
    r"^(sha256:[a-fA-F0-9]{64}"
    r"|doca[0-9]+\.[0-9]+(\.[0-9]+)?-[0-9]+\.[0-9]+-[0-9]+\.[0-9]+\.[0-9]+\.[0-9]+-[0-9]+(-[\w.\-]+)*"
    r"|[0-9]+\.[0-9]+-[0-9]+(\.[0-9]+)*(-[0-9]+)?(-[\w.\-]+)*)$"
)


class CannotList(Exception):
    """A read the webhook needs failed: it admits, as upstream does."""


def node_overlap(name: str, selectors: dict, node_labels: dict) -> str | None:
    """The operator's overlap rule (pkg/policyoverlap), which its webhook and its controller
    share: the first node (by name) that the named NicNodePolicy and another select, in the
    operator's words. selectors: policy name -> nodeSelector; node_labels: node -> labels."""
    for node, labels in sorted(node_labels.items()):
        selecting = sorted(
            n for n, selector in selectors.items() if selector_matches(selector, labels)
        )
        if name in selecting and len(selecting) > 1:
            return (
                f'node selector overlap detected: node "{node}" is selected by policies: '
                f"[{', '.join(selecting)}]"
            )
    return None


class Cluster:
    """The reads the webhooks make, through the simulator's client."""

    def __init__(self, api_client: client.ApiClient):
        self.api_client = api_client
        self.custom = client.CustomObjectsApi(api_client)
        self.core = client.CoreV1Api(api_client)

    def policies(self, plural: str) -> list[dict]:
        try:
            return self.custom.list_cluster_custom_object("mellanox.com", "v1alpha1", plural)[
                "items"
            ]
        except ApiException as error:
            raise CannotList(f"{plural}: {error.status} {error.reason}") from error

    def node_labels(self) -> dict[str, dict]:
        try:
            nodes = self.core.list_node().items
        except ApiException as error:
            raise CannotList(f"nodes: {error.status} {error.reason}") from error
        return {n.metadata.name: n.metadata.labels or {} for n in nodes}


def _defined(spec: dict | None) -> list[str]:
    return [s for s in SHARED_SECTIONS if (spec or {}).get(s) is not None]


def _driver_version_refused(spec: dict) -> str | None:
    """Both policies' ofedDriver (validateOFEDDriverSpec): a version of a form upstream takes."""
    version = (spec.get("ofedDriver") or {}).get("version")
    if version is not None and not _OFED_VERSION.match(str(version)):
        return f"spec.ofedDriver.version: invalid OFED version {version!r}"
    return None


def review_nic_node_policy(policy: dict, cluster: Cluster) -> str | None:
    """Why the NicNodePolicy is refused, or None when it is admitted."""
    name = policy["metadata"]["name"]
    spec = policy.get("spec") or {}
    if len(name) > MAX_NIC_NODE_POLICY_NAME:
        return (
            f"NicNodePolicy name {name!r} is {len(name)} characters long; it must be at most "
            f"{MAX_NIC_NODE_POLICY_NAME}"
        )
    refused = _driver_version_refused(spec)
    if refused:
        return refused
    cluster_policies = cluster.policies("nicclusterpolicies")
    if cluster_policies:
        defined = set(_defined(cluster_policies[0].get("spec")))
        for section in _defined(spec):
            if section in defined:
                return (
                    f"NicClusterPolicy already defines {section}; NicNodePolicy {name!r} "
                    "cannot also define it"
                )
    selectors = {
        p["metadata"]["name"]: (p.get("spec") or {}).get("nodeSelector")
        for p in cluster.policies("nicnodepolicies")
    }
    selectors[name] = spec.get("nodeSelector")  # the incoming spec in place of the stored one
    return node_overlap(name, selectors, cluster.node_labels())


def review_nic_cluster_policy(policy: dict, cluster: Cluster) -> str | None:
    refused = _driver_version_refused(policy.get("spec") or {})
    if refused:
        return refused
    defined = _defined(policy.get("spec"))
    if not defined:
        return None
    for node_policy in cluster.policies("nicnodepolicies"):
        for section in _defined(node_policy.get("spec")):
            if section in defined:
                return (
                    f"NicNodePolicy {node_policy['metadata']['name']!r} already defines "
                    f"{section}; NicClusterPolicy cannot also define it"
                )
    return None


REVIEWS = {
    NIC_CLUSTER_POLICY_PATH: review_nic_cluster_policy,
    NIC_NODE_POLICY_PATH: review_nic_node_policy,
}


def respond(path: str, review: dict, cluster: Cluster) -> dict:
    """The AdmissionReview answer to one request."""
    request = review.get("request") or {}
    refusal = None
    judge = REVIEWS.get(path)
    if judge is not None and request.get("operation") in ("CREATE", "UPDATE"):
        try:
            refusal = judge(request["object"], cluster)
        except CannotList as error:
            log.warning("%s admits %s: cannot list %s", path, request.get("name"), error)
    response = {"uid": request.get("uid"), "allowed": refusal is None}
    if refusal is not None:
        response["status"] = {"code": 403, "reason": "Forbidden", "message": refusal}
        log.info("%s refused %s: %s", path, request.get("name"), refusal)
    return {"apiVersion": "admission.k8s.io/v1", "kind": "AdmissionReview", "response": response}


class WebhookServer:
    """The HTTPS endpoint the API server calls: https://127.0.0.1:<port><path>."""

    def __init__(self, api_client: client.ApiClient, port: int, cert: str, key: str, ca: str):
        self.cluster = Cluster(api_client)
        self.port = port
        with open(ca, "rb") as handle:
            self.ca_bundle = base64.b64encode(handle.read()).decode()
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        context.load_cert_chain(cert, key)
        cluster = self.cluster

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self):
                length = int(self.headers.get("Content-Length") or 0)
                review = json.loads(self.rfile.read(length))
                answer = respond(self.path.split("?")[0], review, cluster)
                body = json.dumps(answer).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format, *args):
                log.debug(format, *args)

        self.httpd = ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.httpd.socket = context.wrap_socket(self.httpd.socket, server_side=True)

    def url(self, path: str) -> str:
        return f"https://127.0.0.1:{self.port}{path}"

    def start(self) -> threading.Thread:
        thread = threading.Thread(target=self.httpd.serve_forever, name="webhooks", daemon=True)
        thread.start()
        return thread
