"""The Ansible Automation Platform content (playbooks/vars/aap_configuration.yml): every survey
question sets a documented variable that the template's playbook reads, with the documented
choices and default; survey answers, strings as the platform passes them, give a valid plan for
all six configurations; every job template's playbook exists; the workflow runs existing
templates, site then verify, and asks what they need; playbooks/aap_configure.yml loads all of
it; Ansible loads the file and resolves it from the settings alone."""

from __future__ import annotations

import itertools
import json
import re
from pathlib import Path

import pytest
import yaml
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar

from ansible_collections.gpudirect.rdma.plugins.modules import plan as plan_doc
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.argspec import plain
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.plan import build_plan
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.plan.inputs import (
    FABRICS,
    METHODS,
    PREFIX,
)
from ansible_collections.gpudirect.rdma.plugins.plugin_utils.plan.settings import unknown_variables

REPO_ROOT = Path(__file__).resolve().parents[2]
DATA_FILE = REPO_ROOT / "playbooks" / "vars" / "aap_configuration.yml"
CONFIGURE = REPO_ROOT / "playbooks" / "aap_configure.yml"
DATA = yaml.safe_load(DATA_FILE.read_text())
TEMPLATES = {template["name"]: template for template in DATA["controller_templates"]}
(WORKFLOW,) = DATA["controller_workflows"]
WORKFLOW_NODES = WORKFLOW["simplified_workflow_nodes"]
SURVEYS = [(name, t["survey_spec"]) for name, t in TEMPLATES.items()] + [
    (WORKFLOW["name"], WORKFLOW["survey_spec"])
]
QUESTIONS = [(name, q) for name, survey in SURVEYS for q in survey["spec"]]
QUESTION_IDS = [f"{name}:{q['variable']}" for name, q in QUESTIONS]

# The survey types of the platform's API, and the documented types each may set.
SURVEY_TYPES = {
    "text": ("str", "list"),
    "textarea": ("str", "list"),
    "password": ("str",),
    "integer": ("int",),
    "float": ("float",),
    "multiplechoice": ("str", "bool"),
    "multiselect": ("list",),
}
# What the platform passes for an answer of each type.
ANSWER_TYPES = {"integer": int, "float": (int, float)}
# The settings of the data file, as a user gives them.
SETTINGS = {
    "gpudirect_rdma_aap_scm_url": "https://git.example.com/platform/gpudirect.rdma.git",
    "gpudirect_rdma_aap_inventory_path": "inventories/shared-device-roce",
    "gpudirect_rdma_aap_credential": "gpu-cluster-1 API",
    "gpudirect_rdma_aap_execution_environment": "gpudirect-rdma",
}
# infra.aap_configuration's variable of each role aap_configure.yml runs.
ROLE_VARIABLES = {
    "infra.aap_configuration.controller_projects": "controller_projects",
    "infra.aap_configuration.controller_inventories": "controller_inventories",
    "infra.aap_configuration.controller_inventory_sources": "controller_inventory_sources",
    "infra.aap_configuration.controller_credential_types": "controller_credential_types",
    "infra.aap_configuration.controller_job_templates": "controller_templates",
    "infra.aap_configuration.controller_workflow_job_templates": "controller_workflows",
}


def documented() -> dict[str, dict]:
    """Every documented variable: the plan's options (ansible-doc gpudirect.rdma.plan) by their
    gpudirect_rdma_ names, read by 'plan', and every role's options by their own names (a role's
    settings carry its name, as verify_min_gbps), read by that role."""
    variables = {
        PREFIX + name: {**option, "reader": "plan"}
        for name, option in yaml.safe_load(plan_doc.DOCUMENTATION)["options"].items()
    }
    for spec_file in sorted(REPO_ROOT.glob("roles/*/meta/argument_specs.yml")):
        options = yaml.safe_load(spec_file.read_text())["argument_specs"]["main"]["options"]
        for name, option in options.items():
            variables.setdefault(name, {**option, "reader": spec_file.parents[1].name})
    return variables


DOCUMENTED = documented()


def readers(playbook: str) -> set[str]:
    """Who reads variables in a playbook: 'plan' when it (or a role it runs) plans from the
    inventory, and the collection's roles it runs."""
    text = (REPO_ROOT / playbook).read_text()
    roles = set(re.findall(r"gpudirect\.rdma\.([a-z_]+)", text)) & {
        path.name for path in (REPO_ROOT / "roles").iterdir()
    }
    texts = [text] + [
        path.read_text()
        for role in roles
        for path in (REPO_ROOT / "roles" / role / "tasks").glob("*.yml")
    ]
    plans = any(f"gpudirect.rdma.{module}" in each for module in PLANNERS for each in texts)
    return roles | ({"plan"} if plans else set())


def planners() -> set[str]:
    """The modules whose action plans from the inventory when the play has no plan."""
    return {
        path.stem
        for path in (REPO_ROOT / "plugins" / "action").glob("*.py")
        if {"checked_inventory", "PlanAction"} & set(re.findall(r"\w+", path.read_text()))
    }


PLANNERS = planners()


def documented_choices(option: dict) -> list[str]:
    if option["type"] == "bool":
        return ["false", "true"]
    assert "choices" in option, "a multiple choice question for a variable without choices"
    return [str(choice) for choice in option["choices"]]


def as_documented(value, option: dict):
    """A survey default in the documented option's terms."""
    if option["type"] == "bool":
        return {"true": True, "false": False}[value]
    return value


@pytest.mark.parametrize(("survey", "question"), QUESTIONS, ids=QUESTION_IDS)
def test_every_question_sets_a_documented_variable_the_playbook_reads(survey, question):
    assert {"question_name", "variable", "type", "required"} <= set(question)
    variable = question["variable"]
    assert variable in DOCUMENTED, f"{survey}: {variable} is not a documented variable"
    option = DOCUMENTED[variable]
    assert option["type"] in SURVEY_TYPES[question["type"]], (
        f"{survey}: {variable} is a {option['type']}; a {question['type']} question cannot set it"
    )
    if option["type"] == "list":
        assert option["reader"] == "plan", f"{variable}: only the plan reads a list from a string"
    # A workflow's answers go to each of its templates: one of them has to read it.
    playbooks = [
        TEMPLATES[name]["playbook"]
        for name in (
            [survey]
            if survey in TEMPLATES
            else [node["unified_job_template"] for node in WORKFLOW_NODES]
        )
    ]
    assert any(option["reader"] in readers(playbook) for playbook in playbooks), (
        f"{survey}: none of {playbooks} reads {variable} ({option['reader']} does)"
    )


@pytest.mark.parametrize(("survey", "question"), QUESTIONS, ids=QUESTION_IDS)
def test_choices_and_defaults_are_the_documented_ones(survey, question):
    option = DOCUMENTED[question["variable"]]
    where = f"{survey}: {question['variable']}"
    if question["type"] in ("multiplechoice", "multiselect"):
        assert question["choices"] == documented_choices(option), where
    else:
        assert "choices" not in question, where
        assert "choices" not in option, f"{where} has documented choices: ask a multiplechoice"
    default = question.get("default", "")
    if default == "":
        assert "default" not in option or option["default"] in (None, [], ""), (
            f"{where}: no default in the survey, but the documented default is {option['default']}"
        )
        return
    if question["type"] == "multiplechoice":
        assert default in question["choices"], where
    if question["type"] in ANSWER_TYPES:
        assert isinstance(default, ANSWER_TYPES[question["type"]]), where
        assert question.get("min", default) <= default <= question.get("max", default), where
    assert as_documented(default, option) == option.get("default"), (
        f"{where}: survey default {default!r}, documented default {option.get('default')!r}"
    )


def survey_variables(playbook: str) -> list[str]:
    (template,) = [t for t in TEMPLATES.values() if t["playbook"] == playbook]
    return [q["variable"] for q in template["survey_spec"]["spec"]]


def answers(template: dict, **given) -> dict:
    """The extra variables the platform passes: the given answers, else the defaults."""
    result = {}
    for question in template["survey_spec"]["spec"]:
        variable = question["variable"]
        if variable in given:
            result[variable] = given[variable]
        elif "default" in question:
            result[variable] = question["default"]
    return result


def plan_inputs(extra_vars: dict) -> dict:
    """What the plan action reads of the extra variables (it ignores the roles' variables)."""
    assert unknown_variables(extra_vars) == [], "the plan would take these for misspellings"
    return {
        name.removeprefix(PREFIX): value
        for name, value in extra_vars.items()
        if DOCUMENTED[name]["reader"] == "plan"
    }


# The templates whose playbook needs a plan, so asks for the configuration.
CONFIGURING = [
    name
    for name, template in TEMPLATES.items()
    if "gpudirect_rdma_method" in survey_variables(template["playbook"])
]


def test_every_playbook_that_needs_a_plan_asks_for_the_configuration():
    playbooks = {Path(TEMPLATES[name]["playbook"]).stem for name in CONFIGURING}
    assert playbooks == {"site", "verify", "upgrade", "render", "preflight", "drift"}


@pytest.mark.parametrize(("method", "fabric"), list(itertools.product(METHODS, FABRICS)))
@pytest.mark.parametrize("name", CONFIGURING)
def test_survey_answers_plan_every_configuration(name, method, fabric):
    """Strings as the platform passes them: one rail with a gateway, two rails without."""
    template = TEMPLATES[name]
    for interfaces, gateway in (("ens8f0np0", "192.168.2.1"), ("ens8f0np0, ens8f1np0", "")):
        given = {
            "gpudirect_rdma_method": method,
            "gpudirect_rdma_fabric": fabric,
            "gpudirect_rdma_interfaces": interfaces,
            "gpudirect_rdma_ipam_range": "192.168.2.0/24",
            "gpudirect_rdma_ipam_gateway": gateway,
        }
        extra_vars = answers(template, **given)
        assert set(given) <= set(extra_vars), f"{name} does not ask {set(given) - set(extra_vars)}"
        plan = build_plan(plan_inputs(extra_vars))
        assert (plan["groups"][0]["method"], plan["groups"][0]["fabric"]) == (method, fabric)
        assert [r["interface"] for r in plan["groups"][0]["rails"]] == [
            i.strip() for i in interfaces.split(",")
        ]


def test_every_template_runs_an_existing_playbook_and_the_five_are_there():
    for name, template in TEMPLATES.items():
        assert (REPO_ROOT / template["playbook"]).is_file(), f"{name}: no {template['playbook']}"
        assert template["project"] == DATA["controller_projects"][0]["name"], name
        assert template["inventory"] == DATA["controller_inventories"][0]["name"], name
        assert template["survey_enabled"] is True and template["survey_spec"]["spec"], name
        assert {"name", "description", "spec"} <= set(template["survey_spec"]), name
        variables = survey_variables(template["playbook"])
        assert len(variables) == len(set(variables)), f"{name} asks a variable twice"
    playbooks = {Path(t["playbook"]).stem for t in TEMPLATES.values()}
    assert {"site", "verify", "upgrade", "uninstall", "render", "diagnostics"} <= playbooks
    assert len(TEMPLATES) == len(DATA["controller_templates"]), "template names are unique"


def test_the_workflow_runs_site_then_verify_on_existing_templates():
    identifiers = [node["identifier"] for node in WORKFLOW_NODES]
    assert len(identifiers) == len(set(identifiers))
    for node in WORKFLOW_NODES:
        assert node["unified_job_template"] in TEMPLATES, node
        for edge in ("success_nodes", "failure_nodes", "always_nodes"):
            assert set(node.get(edge, [])) <= set(identifiers), node
    by_id = {node["identifier"]: node for node in WORKFLOW_NODES}
    site = TEMPLATES[by_id["site"]["unified_job_template"]]
    verify = TEMPLATES[by_id["verify"]["unified_job_template"]]
    assert (site["playbook"], verify["playbook"]) == ("playbooks/site.yml", "playbooks/verify.yml")
    assert by_id["site"]["success_nodes"] == ["verify"]


def test_the_workflow_asks_what_its_templates_ask_in_the_same_words():
    assert WORKFLOW["survey_enabled"] is True
    assert {"name", "description", "spec"} <= set(WORKFLOW["survey_spec"])
    asked = {q["variable"]: q for q in WORKFLOW["survey_spec"]["spec"]}
    for node in WORKFLOW_NODES:
        template = TEMPLATES[node["unified_job_template"]]
        for question in template["survey_spec"]["spec"]:
            assert asked.get(question["variable"]) == question, (
                f"{WORKFLOW['name']} asks {question['variable']} unlike {template['name']}"
            )


def test_aap_configure_loads_every_part_of_the_data():
    play = yaml.safe_load(CONFIGURE.read_text())[0]
    assert play["vars_files"] == [DATA_FILE.relative_to(CONFIGURE.parent).as_posix()]
    roles = [role["role"] for role in play["roles"]]
    assert roles == list(ROLE_VARIABLES)
    parts = {name for name in DATA if not name.startswith(PREFIX)}
    assert parts == set(ROLE_VARIABLES.values())
    checked = {item["name"] for item in play["pre_tasks"][0]["loop"]}
    assert checked == set(SETTINGS), "the required settings are the ones checked"
    # They may live in the site's inventory: the plan never takes them for misspelt inputs.
    settings = [
        *SETTINGS,
        "gpudirect_rdma_aap_organization",
        "gpudirect_rdma_aap_scm_branch",
        "gpudirect_rdma_aap_registry_credential",
    ]
    assert unknown_variables([*settings, *(n for n in DATA if n.startswith(PREFIX))]) == []


def test_ansible_loads_the_data_and_resolves_it_from_the_settings():
    loader = DataLoader()
    data = loader.load_from_file(str(DATA_FILE), trusted_as_template=True)  # as vars_files
    templar = Templar(loader=loader, variables={**data, **SETTINGS})
    resolved = plain(templar.template({name: data[name] for name in ROLE_VARIABLES.values()}))
    # The credential type's injectors are templates of the platform's own (checked below).
    injectors = [t.pop("injectors") for t in resolved["controller_credential_types"]]
    assert "{{" not in json.dumps(resolved)
    assert all(set(i) == {"extra_vars"} for i in injectors)
    assert resolved["controller_templates"][0]["credentials"] == ["gpu-cluster-1 API"]
    assert resolved["controller_projects"][0]["organization"] == "Default"
    assert resolved["controller_projects"][0]["scm_branch"] == ""
    assert resolved["controller_inventory_sources"][0]["source_path"] == (
        "inventories/shared-device-roce"
    )


def test_the_registry_credential_type_gives_the_documented_variables_and_hides_the_password():
    (credential_type,) = DATA["controller_credential_types"]
    fields = {field["id"]: field for field in credential_type["inputs"]["fields"]}
    assert fields["password"].get("secret") is True
    assert not fields["username"].get("secret")
    injected = credential_type["injectors"]["extra_vars"]
    assert set(injected) == {
        "gpudirect_rdma_image_registry_username",
        "gpudirect_rdma_image_registry_password",
    }
    for name in injected:
        assert DOCUMENTED[name]["reader"] in ("plan", "network_operator"), name
    role_spec = REPO_ROOT / "roles" / "network_operator" / "meta" / "argument_specs.yml"
    options = yaml.safe_load(role_spec.read_text())["argument_specs"]["main"]["options"]
    assert options["gpudirect_rdma_image_registry_password"]["no_log"] is True
    # Loaded through Ansible, the injectors stay templates of the platform's own.
    loader = DataLoader()
    data = loader.load_from_file(str(DATA_FILE), trusted_as_template=True)
    templar = Templar(loader=loader, variables={**data, **SETTINGS})
    resolved = plain(templar.template(data["controller_credential_types"]))
    assert resolved[0]["injectors"]["extra_vars"] == {
        "gpudirect_rdma_image_registry_username": "{{ username }}",
        "gpudirect_rdma_image_registry_password": "{{ password }}",
    }
    with_registry = {**SETTINGS, "gpudirect_rdma_aap_registry_credential": "mirror login"}
    templar = Templar(loader=loader, variables={**data, **with_registry})
    site = plain(templar.template(data["controller_templates"][0]))
    assert site["credentials"] == ["gpu-cluster-1 API", "mirror login"]
