"""gpudirect.rdma.drift_files: the drift report as JUnit XML and as an HTML page."""

from __future__ import annotations

DOCUMENTATION = r"""
name: drift_files
author: gpudirect.rdma maintainers (!UNKNOWN)
version_added: 0.1.0
short_description: The GPUDirect RDMA drift report as JUnit XML and a self-contained HTML page
description:
  - Takes the result of M(gpudirect.rdma.drift) (with C(run), the date, cluster and inventory,
    added by the drift role) and returns the text of two files.
  - C(junit) is JUnit XML with one test case per step of the step table and one for the cluster's
    own (class name C(gpudirect.rdma.drift.<step>)); a step where something differs from the
    plan fails, its C(failure) element holding one line per difference, and C(system-out) the
    field, the planned and found values and who changed them. AAP, Jenkins and GitLab show such
    a file as test results.
  - "C(html) is one page that needs no network to open (inline CSS, no script): the verdict, the
    differences counted by kind, then a table per step with each difference's object, field,
    planned and found values, the field managers that changed it and what it means."
options:
  _input:
    description: The result of M(gpudirect.rdma.drift).
    type: dict
    required: true
  title:
    description: The page's title.
    type: str
    default: GPUDirect RDMA drift
"""

EXAMPLES = r"""
- name: Write the JUnit and HTML reports
  gpudirect.rdma.manifest_tree:
    dest: "{{ drift_report_dir }}"
    prune: false
    files:
      drift-report.xml: "{{ (drift_result | gpudirect.rdma.drift_files).junit }}"
      drift-report.html: "{{ (drift_result | gpudirect.rdma.drift_files).html }}"
"""

RETURN = r"""
_value:
  description: The two files' text.
  type: dict
  contains:
    junit:
      description: JUnit XML (UTF-8, with its XML declaration).
      type: str
    html:
      description: An HTML5 page.
      type: str
"""

from ansible.errors import AnsibleFilterError  # noqa: E402

from ansible_collections.gpudirect.rdma.plugins.plugin_utils.argspec import validate  # noqa: E402
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.drift_files import (  # noqa: E402
    html,
    junit,
)


def drift_files(report, title="GPUDirect RDMA drift"):
    args = validate(DOCUMENTATION, "gpudirect.rdma.drift_files", {"_input": report, "title": title})
    try:
        return {"junit": junit(args["_input"]), "html": html(args["_input"], args["title"])}
    except (KeyError, TypeError) as error:
        raise AnsibleFilterError(
            "gpudirect.rdma.drift_files: expected the result of gpudirect.rdma.drift (steps, "
            f"each with step and differences: kind, object, message); {type(error).__name__}: {error}"
        ) from error


class FilterModule:
    def filters(self):
        return {"drift_files": drift_files}
