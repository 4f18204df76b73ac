"""gpudirect.rdma.verify_files: the verification report as JUnit XML and as an HTML page."""

from __future__ import annotations

DOCUMENTATION = r"""
name: verify_files
author: gpudirect.rdma maintainers (!UNKNOWN)
version_added: 0.1.0
short_description: The GPUDirect RDMA verification report as JUnit XML and a self-contained HTML page
description:
  - Takes the report of P(gpudirect.rdma.verify_report#filter) and returns the text of two files.
  - C(junit) is JUnit XML with one test case per pair (class name C(gpudirect.rdma.bandwidth),
    with C(.<group>) when there are node groups; the name says the rail and the nodes), a
    C(failure) element per failed pair holding its problems, and the pair's numbers, GPUs and
    warnings in C(system-out). AAP, Jenkins and GitLab show such a file as test results.
  - C(html) is one page that needs no network to open (inline CSS and SVG, no script), with the
    verdict, a bar chart of each pair's average bandwidth against the threshold, the pairs with
    each side's GPU (index, PCI bus id) and its relation to the NIC, the problems and warnings,
    and the NICs' firmware configuration when the report holds it.
options:
  _input:
    description: The report from P(gpudirect.rdma.verify_report#filter).
    type: dict
    required: true
  title:
    description: The page's title.
    type: str
    default: GPUDirect RDMA verification
"""

EXAMPLES = r"""
- name: Write the JUnit and HTML reports
  ansible.builtin.copy:
    dest: "{{ item.dest }}"
    content: "{{ item.content }}"
    mode: "0644"
  loop:
    - {dest: verify-report.xml, content: "{{ (verify_result | gpudirect.rdma.verify_files).junit }}"}
    - {dest: verify-report.html, content: "{{ (verify_result | gpudirect.rdma.verify_files).html }}"}
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
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.report_files import (  # noqa: E402
    html,
    junit,
)


def verify_files(report, title="GPUDirect RDMA verification"):
    args = validate(
        DOCUMENTATION, "gpudirect.rdma.verify_files", {"_input": report, "title": title}
    )
    try:
        return {"junit": junit(args["_input"]), "html": html(args["_input"], args["title"])}
    except (KeyError, TypeError) as error:
        raise AnsibleFilterError(
            "gpudirect.rdma.verify_files: expected the report of gpudirect.rdma.verify_report "
            f"(pairs with rail, nodes, passed and problems); {type(error).__name__}: {error}"
        ) from error


class FilterModule:
    def filters(self):
        return {"verify_files": verify_files}
