"""playbooks/vars/aap_configuration.yml against what the platform accepts.

Each item of each list goes the way infra.aap_configuration's role sends it: the role's key
mapping (written down below as data, with where it was read) turns the item into the options of
one awx.awx module, and those options are validated with that module's own argument spec,
captured from the module itself with nothing connecting. Every survey spec is checked with the
rules AWX applies when a survey is saved and when a default is used at launch (also data, with
their source). Broken copies of the file prove that each check fails, naming the item and the key.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import importlib
from dataclasses import dataclass, field
from typing import Any
from unittest import mock

import pytest
import yaml
from ansible.module_utils.basic import AnsibleModule
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.parsing.dataloader import DataLoader
from ansible.template import Templar

from ansible_collections.gpudirect.rdma.plugins.plugin_utils.argspec import plain
from tests.unit.test_aap import DATA_FILE, ROLE_VARIABLES, SETTINGS

# ---------------------------------------------------------------------------------------------
# 1. The awx.awx modules' own argument specs, without a platform.
#
# Each module builds its spec in main() and hands it to ControllerAPIModule
# (awx.awx plugins/module_utils/controller_api.py), whose ControllerModule adds the connection
# options (AUTH_ARGSPEC) and passes the whole spec, with the module's constraints
# (mutually_exclusive, required_if, ...), to AnsibleModule.__init__. Replacing that one
# constructor records exactly what a real run validates against, and stops main() there: no
# configuration file is read and nothing connects.
# ---------------------------------------------------------------------------------------------

AWX_MODULES = "ansible_collections.awx.awx.plugins.modules"
CONSTRAINTS = ("mutually_exclusive", "required_together", "required_one_of", "required_if")


class _Recorded(Exception):
    """Raised instead of building the module: the argument spec has been recorded."""


@dataclass(frozen=True)
class ModuleSpec:
    argument_spec: dict
    constraints: dict

    def option(self, name: str) -> str | None:
        """The option a parameter name (an option or one of its aliases) sets."""
        for option, spec in self.argument_spec.items():
            if name == option or name in spec.get("aliases", ()):
                return option
        return None


@functools.cache
def module_spec(name: str) -> ModuleSpec:
    module = importlib.import_module(f"{AWX_MODULES}.{name}")
    recorded: dict[str, Any] = {}

    def record(_self, argument_spec, **kwargs):
        recorded.update(argument_spec=argument_spec, kwargs=kwargs)
        raise _Recorded

    with mock.patch.object(AnsibleModule, "__init__", record), contextlib.suppress(_Recorded):
        module.main()
    assert recorded, f"awx.awx.{name}: main() never built its module"
    kwargs = recorded["kwargs"]
    return ModuleSpec(
        argument_spec=copy.deepcopy(recorded["argument_spec"]),
        constraints={key: kwargs[key] for key in CONSTRAINTS if key in kwargs},
    )


def call_errors(label: str, module: str, params: dict) -> list[str]:
    """What awx.awx.<module> refuses of these options: unknown options, wrong types, bad
    choices, the module's constraints; and a list or a mapping (or a boolean) given to a text
    option, which the module would only turn into its Python text form."""
    spec = module_spec(module)
    result = ArgumentSpecValidator(spec.argument_spec, **spec.constraints).validate(params)
    errors = [f"{label} (awx.awx.{module}): {message}" for message in result.error_messages]
    for name, value in params.items():
        option = spec.option(name)
        if option is None or spec.argument_spec[option].get("type", "str") != "str":
            continue
        if isinstance(value, (list, dict, bool)):
            errors.append(
                f"{label} (awx.awx.{module}): {name} is text; got the "
                f"{type(value).__name__} {value!r}"
            )
    return errors


# ---------------------------------------------------------------------------------------------
# 2. infra.aap_configuration's key mapping: which item keys each role passes to which awx.awx
# module option, with which default, read from the role's task files (the roles call
# ansible.controller.<module>, the platform's build of awx.awx, with the same options):
#   redhat-cop/infra.aap_configuration at dfcfaf1205cd751bb148e99203d1a8af3c8d0e63:
#     roles/controller_projects/tasks/process_project_batch.yml
#     roles/controller_inventories/tasks/process_inventory_batch.yml
#     roles/controller_inventory_sources/tasks/process_inventory_source_batch.yml
#     roles/controller_credential_types/tasks/process_credential_type_batch.yml
#     roles/controller_job_templates/tasks/process_jt_batch.yml (as tasks/main.yml at 11e5f8e)
#   at 01a934f05871792b621b56471c5536d833e2f749:
#     roles/controller_workflow_job_templates/tasks/main.yml
#     roles/controller_workflow_job_templates/tasks/add_workflows_schema.yml
# Facts of those files the mapping below states:
# - A role passes only the options it lists; any other key of an item is dropped without a
#   word (the roles' meta/argument_specs.yml leave the items' options unchecked). So an item key
#   outside the mapping is an error here: the platform would never see it.
# - `default(omit, true)` leaves a blank value ('', [], {}, 0, false) out (blank_omits);
#   `x.name | default(x)` takes the name of a {name: ...} mapping (by_name); `| mandatory` fails
#   the role without the key. Defaults apply with aap_configuration_enforce_defaults false,
#   its default (the roles' defaults/main.yml); platform_state defaults to present.
# - The workflow role makes one workflow_job_template_node call per simplified_workflow_nodes
#   entry, with the workflow's name (option `workflow`, an alias of workflow_job_template) and
#   its organization (which it then requires), and a second call per node with links
#   (success_nodes, failure_nodes, always_nodes).
# - Keys in the export format (`related`) and object roles (`roles`, handed to the
#   controller_roles role and awx.awx.role) are not mapped here; the file must not use them
#   until they are.
# ---------------------------------------------------------------------------------------------

OMIT = object()
NOT_MAPPED = frozenset({"related", "roles"})


@dataclass(frozen=True)
class Key:
    """How a role passes one option: the value of the first of `keys` the item has."""

    keys: tuple[str, ...]
    default: Any = OMIT
    blank_omits: bool = False
    by_name: bool = False
    mandatory: bool = False


def same(options: str, **how) -> dict[str, Key]:
    """Options (separated by white space) passed from the item key of the same name."""
    return {option: Key((option,), **how) for option in options.split()}


def renamed(option: str, *keys: str, **how) -> dict[str, Key]:
    return {option: Key(keys, **how)}


STATE = renamed("state", "state", default="present")
NOTIFY = (
    "notification_templates_started notification_templates_success notification_templates_error"
)


@dataclass(frozen=True)
class Call:
    """One awx.awx module call a role makes for each item of its list."""

    role: str
    module: str
    options: dict[str, Key]
    # Options the role fills from the parent item (a workflow, for its nodes).
    from_parent: dict[str, Key] = field(default_factory=dict)
    # Item keys the role reads for something other than this call.
    consumed: frozenset[str] = frozenset()
    # (key, value): the role skips items with this value.
    skipped_if: tuple[str, str] | None = None


PROJECT = Call(
    role="controller_projects",
    module="project",
    options={
        **same("name", mandatory=True),
        **same(
            f"new_name copy_from description scm_url default_environment local_path scm_refspec "
            f"custom_virtualenv {NOTIFY}",
            blank_omits=True,
        ),
        **same("signature_validation_credential", by_name=True, blank_omits=True),
        **renamed("credential", "credential", "scm_credential", by_name=True),
        **same("organization", by_name=True),
        **same(
            "scm_branch scm_clean scm_delete_on_update scm_track_submodules scm_update_on_launch "
            "scm_update_cache_timeout allow_override wait update_project"
        ),
        **renamed("timeout", "job_timeout", "timeout"),
        **renamed("scm_type", "scm_type", default="manual"),
        # controller_configuration_projects_async_delay: aap_configuration_async_delay, else 1.
        **renamed("interval", "interval", default=1),
        **STATE,
    },
)

INVENTORY = Call(
    role="controller_inventories",
    module="inventory",
    options={
        **same("name", mandatory=True),
        **same("organization", by_name=True, mandatory=True),
        # The role also turns `{  {` into `{{` in the variables (a way to keep templates).
        **same(
            "new_name copy_from description instance_groups input_inventories variables kind "
            "host_filter prevent_instance_group_fallback",
            blank_omits=True,
        ),
        **STATE,
    },
)

INVENTORY_SOURCE = Call(
    role="controller_inventory_sources",
    module="inventory_source",
    options={
        **same("name", mandatory=True),
        **same("inventory", by_name=True, mandatory=True),
        **same(
            f"new_name description organization source source_path source_vars enabled_var "
            f"enabled_value host_filter limit credential execution_environment custom_virtualenv "
            f"verbosity scm_branch {NOTIFY}",
            blank_omits=True,
        ),
        **same("source_project", by_name=True, blank_omits=True),
        **same("overwrite overwrite_vars timeout update_on_launch update_cache_timeout"),
        **STATE,
    },
    skipped_if=("source", "constructed"),
)

CREDENTIAL_TYPE = Call(
    role="controller_credential_types",
    module="credential_type",
    options={
        **same("name", mandatory=True),
        # The role also turns `{  {` into `{{` in the injectors (a way to keep templates).
        **same("new_name description injectors inputs", blank_omits=True),
        **renamed("kind", "kind", default="cloud"),
        **STATE,
    },
)

ASKED = (
    "ask_scm_branch_on_launch ask_diff_mode_on_launch ask_variables_on_launch "
    "ask_limit_on_launch ask_job_type_on_launch ask_verbosity_on_launch ask_inventory_on_launch "
    "ask_credential_on_launch ask_execution_environment_on_launch ask_forks_on_launch "
    "ask_instance_groups_on_launch ask_job_slice_count_on_launch ask_labels_on_launch "
    "ask_timeout_on_launch"
)

JOB_TEMPLATE = Call(
    role="controller_job_templates",
    module="job_template",
    options={
        **same("name", mandatory=True),
        **same(
            f"new_name copy_from description custom_virtualenv playbook credentials extra_vars "
            f"job_tags skip_tags start_at_task host_config_key instance_groups job_slice_count "
            f"webhook_service webhook_credential scm_branch labels {NOTIFY}",
            blank_omits=True,
        ),
        **same(
            "execution_environment inventory organization project", by_name=True, blank_omits=True
        ),
        **same(
            f"forks limit verbosity timeout force_handlers diff_mode use_fact_cache {ASKED} "
            f"prevent_instance_group_fallback survey_enabled become_enabled allow_simultaneous"
        ),
        **renamed("ask_tags_on_launch", "ask_tags", "ask_tags_on_launch"),
        **renamed("ask_skip_tags_on_launch", "ask_skip_tags", "ask_skip_tags_on_launch"),
        **renamed("survey_spec", "survey_spec", "survey"),
        **renamed("job_type", "job_type", default="run"),
        **STATE,
    },
)

WORKFLOW = Call(
    role="controller_workflow_job_templates",
    module="workflow_job_template",
    options={
        **same("name", mandatory=True),
        **same(
            f"new_name copy_from description extra_vars labels scm_branch job_tags skip_tags "
            f"webhook_service workflow_nodes {NOTIFY} notification_templates_approvals",
            blank_omits=True,
        ),
        **same("organization inventory webhook_credential", by_name=True, blank_omits=True),
        **same(
            "allow_simultaneous ask_variables_on_launch limit ask_inventory_on_launch "
            "ask_scm_branch_on_launch ask_limit_on_launch ask_labels_on_launch survey_enabled"
        ),
        **renamed("ask_tags_on_launch", "ask_tags", "ask_tags_on_launch"),
        **renamed("ask_skip_tags_on_launch", "ask_skip_tags", "ask_skip_tags_on_launch"),
        **renamed("survey_spec", "survey_spec", "survey"),
        **renamed("destroy_current_nodes", "destroy_current_nodes", "destroy_current_schema"),
        **STATE,
    },
    consumed=frozenset({"simplified_workflow_nodes"}),
)

NODE_PARENT = {
    **renamed("workflow", "name", mandatory=True),
    **same("organization", by_name=True, mandatory=True),
}
LINKS = ("success_nodes", "failure_nodes", "always_nodes")

WORKFLOW_NODE = Call(
    role="controller_workflow_job_templates",
    module="workflow_job_template_node",
    options={
        **same("identifier", mandatory=True),
        **same(
            "extra_data inventory scm_branch job_type job_tags skip_tags limit verbosity "
            "credentials lookup_organization forks instance_groups job_slice_count labels timeout "
            "approval_node",
            blank_omits=True,
        ),
        **same(
            "workflow_job_template unified_job_template execution_environment",
            by_name=True,
            blank_omits=True,
        ),
        **same("diff_mode"),
        **renamed("all_parents_must_converge", "all_parents_must_converge", default="false"),
        **STATE,
    },
    from_parent=NODE_PARENT,
    consumed=frozenset(LINKS),
)

# The second call, for the nodes with links.
WORKFLOW_NODE_LINKS = Call(
    role="controller_workflow_job_templates",
    module="workflow_job_template_node",
    options={**same("identifier", mandatory=True), **same(" ".join(LINKS), default=[]), **STATE},
    from_parent=NODE_PARENT,
)

# Each list of the data file and the call its role makes for each item.
CALLS = {
    "controller_projects": PROJECT,
    "controller_inventories": INVENTORY,
    "controller_inventory_sources": INVENTORY_SOURCE,
    "controller_credential_types": CREDENTIAL_TYPE,
    "controller_templates": JOB_TEMPLATE,
    "controller_workflows": WORKFLOW,
}


def passed_options(item: dict, keys: dict[str, Key]) -> tuple[dict, list[str]]:
    """The options a role passes for an item, and the keys it requires but the item lacks."""
    params: dict[str, Any] = {}
    missing = []
    for option, key in keys.items():
        given = [name for name in key.keys if name in item]
        if given:
            value = item[given[0]]
            if key.by_name and isinstance(value, dict) and "name" in value:
                value = value["name"]
            if key.blank_omits and not value:
                continue
            params[option] = value
        elif key.mandatory:
            missing.append(key.keys[0])
        elif key.default is not OMIT:
            params[option] = copy.deepcopy(key.default)
    return params, missing


def item_label(variable: str, item: dict) -> str:
    return f"{variable} {item.get('name', item.get('identifier'))!r}"


def _dropped(label: str, item: dict, call: Call) -> list[str]:
    """The item's keys the role never passes on."""
    known = {name for key in call.options.values() for name in key.keys} | call.consumed
    return [
        f"{label}: {name} is not a key {call.role} passes to awx.awx.{call.module} (the role "
        f"drops it silently{'; not mapped in this test yet' if name in NOT_MAPPED else ''})"
        for name in item
        if name not in known
    ]


def _required(label: str, call: Call, missing: list[str], whose: str = "") -> list[str]:
    return [f"{label}: {call.role} requires {whose}{name}" for name in missing]


def calls_of(variable: str, item: dict) -> list[tuple[str, Call, dict, list[str]]]:
    """The module calls the role makes for one item: (label, call, options, the errors found
    before the call: keys dropped or missing)."""
    call = CALLS[variable]
    label = item_label(variable, item)
    if call.skipped_if and item.get(call.skipped_if[0]) == call.skipped_if[1]:
        return []
    params, missing = passed_options(item, call.options)
    result = [(label, call, params, _dropped(label, item, call) + _required(label, call, missing))]
    for node in item.get("simplified_workflow_nodes", []):
        node_label = f"{label} node {node.get('identifier')!r}"
        for node_call in (WORKFLOW_NODE, WORKFLOW_NODE_LINKS):
            if node_call is WORKFLOW_NODE_LINKS and not any(node.get(link) for link in LINKS):
                continue
            parent, parent_missing = passed_options(item, node_call.from_parent)
            node_params, node_missing = passed_options(node, node_call.options)
            errors = _required(node_label, node_call, parent_missing, "the workflow's ")
            errors += _required(node_label, node_call, node_missing)
            if node_call is WORKFLOW_NODE:
                errors += _dropped(node_label, node, node_call)
            result.append((node_label, node_call, {**node_params, **parent}, errors))
    return result


def item_errors(variable: str, item: dict) -> list[str]:
    errors = []
    for label, call, params, before in calls_of(variable, item):
        errors += before + call_errors(label, call.module, params)
    return errors


# ---------------------------------------------------------------------------------------------
# 3. AWX's survey spec rules, from the ansible/awx repository:
#   awx/api/views/__init__.py (0078f9e1b48c27fd57c5fd381c86ac0740cb2a47),
#     JobTemplateSurveySpec._validate_spec_data: what POST .../survey_spec/ refuses; the
#     workflow job template's survey view is a subclass with the same checks;
#   awx/main/constants.py (6c5fd93ce571df8f6b2e24d5b48fc590c49fbeef), SURVEY_TYPE_MAPPING:
#     the question types and the type of each one's default;
#   awx/main/models/mixins.py (6a9566e10234c9dc42b870f2a8178e90fe950293),
#     SurveyJobTemplateMixin._survey_element_validation: an answer's checks, also applied to a
#     default before a launch uses it (a default that fails them is dropped);
#   awx/api/templates/api/job_template_survey_spec.md: the fields of a survey and a question.
# Two checks here are stricter than the platform, which would take the survey and lose the
# intent: a question field it does not read (it stores and ignores a misspelt `defualt`), and a
# min above the max (no answer could pass).
# ---------------------------------------------------------------------------------------------

SURVEY_FIELDS = {"name": str, "description": str, "spec": list}  # all required; spec not empty
QUESTION_REQUIRED = {"type": str, "question_name": str, "variable": str, "required": bool}
# The fields of a question the platform reads.
QUESTION_FIELDS = {*QUESTION_REQUIRED, "question_description", "default", "choices", "min", "max"}
DEFAULT_TYPES = {
    "text": (str,),
    "textarea": (str,),
    "password": (str,),
    "multiplechoice": (str,),
    "multiselect": (str,),
    "integer": (int,),
    "float": (float, int),
}
# min and max: an integer or null; they bound an answer's length for these types ...
LENGTH_BOUND = {"text", "textarea", "password"}
# ... and its value for these (compared as int for integer, as float for float).
VALUE_BOUND = {"integer": int, "float": float}
# These need choices: a list, or one string of lines (blank lines dropped); the view's comment
# says choices and defaults come as strings. A multiplechoice default is one choice; a
# multiselect default is some of them (lines of a string, or a list).
CHOICE_TYPES = {"multiplechoice", "multiselect"}
# An answer's type at launch (type(), not isinstance(): true is no integer there).
ANSWER_TYPES = {"integer": (int,), "float": (float, int)}
# A default starting with this is refused, except for a password question whose saved
# default it stands for (a new survey has none).
ENCRYPTED = "$encrypted$"
KIND = {str: "text", int: "an integer", float: "a number", bool: "a boolean", list: "a list"}


def _choices(question: dict) -> list:
    choices = question.get("choices")
    if isinstance(choices, str):
        return [line for line in choices.splitlines() if line.strip()]
    return list(choices) if isinstance(choices, list) else []


def _limit(question: dict, key: str):
    value = question.get(key)
    return None if value in ("", None) else value


def launch_errors(question: dict, value) -> list[str]:
    """Why a launch drops this default of a question that has no choices (the answer checks
    of _survey_element_validation)."""
    qtype = question["type"]
    if qtype in ANSWER_TYPES and type(value) not in ANSWER_TYPES[qtype]:
        return [f"{value!r} is not {KIND[ANSWER_TYPES[qtype][0]]}"]
    measured, what = (len(value), "length") if qtype in LENGTH_BOUND else (value, "value")
    bound = VALUE_BOUND.get(qtype, int)
    low, high = _limit(question, "min"), _limit(question, "max")
    errors = []
    if low is not None and measured < bound(low):
        errors.append(f"{what} {measured} is below min {low}")
    if high is not None and measured > bound(high):
        errors.append(f"{what} {measured} is above max {high}")
    return errors


def question_errors(where: str, question: dict) -> list[str]:
    errors = []
    for name, wanted in QUESTION_REQUIRED.items():
        if name not in question:
            errors.append(f"{where}: {name} is missing")
        elif not isinstance(question[name], wanted):
            errors.append(f"{where}: {name} is not {KIND[wanted]}: {question[name]!r}")
    errors += [
        f"{where}: {name} is not a question field the platform reads "
        f"(one of {', '.join(sorted(QUESTION_FIELDS))})"
        for name in question
        if name not in QUESTION_FIELDS
    ]
    qtype = question.get("type")
    if qtype not in DEFAULT_TYPES:
        return [*errors, f"{where}: type {qtype!r} is not one of {', '.join(DEFAULT_TYPES)}"]
    for key in ("min", "max"):
        if key in question and question[key] is not None and not isinstance(question[key], int):
            errors.append(f"{where}: {key} is not an integer: {question[key]!r}")
    default = question.get("default")
    has_default = default not in (None, "")
    if has_default and not isinstance(default, DEFAULT_TYPES[qtype]):
        errors.append(f"{where}: default {default!r} is not {KIND[DEFAULT_TYPES[qtype][0]]}")
    if isinstance(default, str) and default.startswith(ENCRYPTED):
        errors.append(f"{where}: default {default!r}: {ENCRYPTED} is reserved")
    if qtype in CHOICE_TYPES:
        choices = question.get("choices")
        if "choices" not in question:
            errors.append(f"{where}: a {qtype} question needs choices")
        elif not (
            isinstance(choices, str)
            or (isinstance(choices, list) and all(isinstance(c, str) for c in choices))
        ) or not _choices(question):
            errors.append(f"{where}: choices {choices!r} are not a list of text or lines of text")
        if has_default and isinstance(default, (str, list)):
            chosen = default.splitlines() if isinstance(default, str) else default
            if qtype == "multiplechoice" and len(chosen) > 1:
                errors.append(f"{where}: a multiplechoice question has one default: {default!r}")
            errors += [
                f"{where}: default {item!r} is not one of the choices {_choices(question)}"
                for item in chosen
                if item not in _choices(question)
            ]
    low, high = _limit(question, "min"), _limit(question, "max")
    if isinstance(low, int) and isinstance(high, int) and low > high:
        errors.append(f"{where}: min {low} is above max {high}: no answer fits")
    if has_default and not errors and qtype not in CHOICE_TYPES:
        errors += [
            f"{where}: default dropped at launch: {e}" for e in launch_errors(question, default)
        ]
    return errors


def survey_errors(label: str, survey) -> list[str]:
    """What the platform refuses of a survey spec (or silently drops, for a default)."""
    where = f"{label}: survey_spec"
    if not isinstance(survey, dict):
        return [f"{where} is not a mapping: {survey!r}"]
    errors = []
    for name, wanted in SURVEY_FIELDS.items():
        if name not in survey:
            errors.append(f"{where}: {name} is missing")
        elif not isinstance(survey[name], wanted):
            errors.append(f"{where}: {name} is not {KIND[wanted]}: {survey[name]!r}")
    errors += [
        f"{where}: {name} is not a survey field (name, description, spec)"
        for name in survey
        if name not in SURVEY_FIELDS
    ]
    questions = survey.get("spec")
    if not isinstance(questions, list):
        return errors
    if not questions:
        errors.append(f"{where}: spec has no questions")
    seen = set()
    for index, question in enumerate(questions):
        if not isinstance(question, dict):
            errors.append(f"{where}: question {index} is not a mapping")
            continue
        variable = question.get("variable")
        errors += question_errors(f"{where}: question {index} ({variable})", question)
        if variable in seen:
            errors.append(f"{where}: question {index}: variable {variable!r} is asked twice")
        seen.add(variable)
    return errors


# ---------------------------------------------------------------------------------------------
# The data file as the roles get it: loaded and templated by Ansible as vars_files are, with
# example values of the settings: the required ones only, and every one.
# ---------------------------------------------------------------------------------------------

SETTING_CASES = {
    "required settings": SETTINGS,
    "every setting": {
        **SETTINGS,
        "gpudirect_rdma_aap_organization": "GPU platform",
        "gpudirect_rdma_aap_scm_branch": "main",
        "gpudirect_rdma_aap_registry_credential": "mirror login",
    },
}


@functools.cache
def _resolved(case: str) -> dict:
    loader = DataLoader()
    data = loader.load_from_file(str(DATA_FILE), trusted_as_template=True)
    templar = Templar(loader=loader, variables={**data, **SETTING_CASES[case]})
    return plain(templar.template({variable: data[variable] for variable in CALLS}))


def resolved(case: str = "required settings") -> dict:
    return copy.deepcopy(_resolved(case))


def surveys_of(data: dict) -> dict[str, Any]:
    """The survey spec each call carries (the role's survey_spec option), by item."""
    return {
        label: params["survey_spec"]
        for variable, items in data.items()
        for item in items
        for label, _call, params, _errors in calls_of(variable, item)
        if "survey_spec" in params
    }


ITEMS = {
    f"{case}:{variable}:{item['name']}": (variable, item)
    for case in SETTING_CASES
    for variable, items in _resolved(case).items()
    for item in items
}
SURVEYS = {
    f"{case}:{label}": (label, survey)
    for case in SETTING_CASES
    for label, survey in surveys_of(resolved(case)).items()
}


def test_the_lists_are_the_ones_aap_configure_loads():
    assert set(CALLS) == set(ROLE_VARIABLES.values())
    for role, variable in ROLE_VARIABLES.items():
        assert role == f"infra.aap_configuration.{CALLS[variable].role}", variable


@pytest.mark.parametrize("module", sorted({call.module for call in CALLS.values()}))
def test_the_recorded_spec_is_the_modules_own(module):
    """The recorded spec has every option the module documents, and the connection options
    ControllerModule adds: it is what a real run validates against."""
    spec = module_spec(module)
    documented = yaml.safe_load(importlib.import_module(f"{AWX_MODULES}.{module}").DOCUMENTATION)
    assert set(documented["options"]) <= set(spec.argument_spec)
    assert {"controller_host", "controller_oauthtoken", "validate_certs"} <= set(spec.argument_spec)


@pytest.mark.parametrize(
    "call",
    [*CALLS.values(), WORKFLOW_NODE, WORKFLOW_NODE_LINKS],
    ids=[*CALLS, "workflow nodes", "workflow node links"],
)
def test_every_option_a_role_passes_is_one_its_module_takes(call):
    spec = module_spec(call.module)
    for option in [*call.options, *call.from_parent]:
        assert spec.option(option), f"{call.role}: awx.awx.{call.module} has no option {option}"


@pytest.mark.parametrize(("variable", "item"), ITEMS.values(), ids=ITEMS)
def test_every_item_is_accepted_by_the_module_its_role_calls(variable, item):
    assert calls_of(variable, item), f"{item_label(variable, item)}: the role skips it"
    assert item_errors(variable, item) == []


@pytest.mark.parametrize(("label", "survey"), SURVEYS.values(), ids=SURVEYS)
def test_every_survey_passes_the_platforms_rules(label, survey):
    assert survey_errors(label, survey) == []


@pytest.mark.parametrize("case", SETTING_CASES)
def test_every_template_with_a_survey_enabled_passes_one(case):
    data = resolved(case)
    enabling = {
        item_label(variable, item)
        for variable, items in data.items()
        for item in items
        if item.get("survey_enabled")
    }
    assert enabling and enabling <= set(surveys_of(data))


def _set(key, value):
    return lambda item: item.__setitem__(key, value)


def _first_node(change):
    return lambda item: change(item["simplified_workflow_nodes"][0])


# (what, list, item name, change, what an error about that item names).
BROKEN_ITEMS = [
    ("unknown key", "controller_templates", "GPUDirect RDMA site", _set("survey_enable", True),
     "survey_enable is not a key controller_job_templates passes"),
    ("export-format key", "controller_templates", "GPUDirect RDMA verify",
     _set("related", {"credentials": []}), "related is not a key"),
    ("wrong type", "controller_templates", "GPUDirect RDMA site", _set("verbosity", "loud"),
     "argument 'verbosity' is of type str"),
    ("not a bool", "controller_templates", "GPUDirect RDMA render",
     _set("allow_simultaneous", "sometimes"), "argument 'allow_simultaneous'"),
    ("bad job_type", "controller_templates", "GPUDirect RDMA uninstall", _set("job_type", "deploy"),
     "value of job_type must be one of: run, check, got: deploy"),
    ("survey not a mapping", "controller_templates", "GPUDirect RDMA diagnostics",
     _set("survey_spec", ["a question"]), "argument 'survey_spec' is of type list"),
    ("list for text", "controller_templates", "GPUDirect RDMA preflight",
     _set("playbook", ["playbooks/preflight.yml"]), "playbook is text; got the list"),
    ("bad scm_type", "controller_projects", "gpudirect.rdma", _set("scm_type", "github"),
     "value of scm_type must be one of"),
    ("no organization", "controller_inventories", "GPUDirect RDMA",
     lambda item: item.pop("organization"), "requires organization"),
    ("bad verbosity", "controller_inventory_sources", "GPUDirect RDMA site inventory",
     _set("verbosity", 3), "value of verbosity must be one of: 0, 1, 2, got: 3"),
    ("bad kind", "controller_credential_types", "GPUDirect RDMA image registry",
     _set("kind", "registry"), "value of kind must be one of"),
    ("inputs as text", "controller_credential_types", "GPUDirect RDMA image registry",
     _set("inputs", "username, password"), "argument 'inputs' is of type str"),
    ("workflow typo", "controller_workflows", "GPUDirect RDMA site and verify",
     _set("simplified_workflow_node", []), "simplified_workflow_node is not a key"),
    ("node key", "controller_workflows", "GPUDirect RDMA site and verify",
     _first_node(_set("job_template", "GPUDirect RDMA site")), "node 'site': job_template is not"),
    ("node job_type", "controller_workflows", "GPUDirect RDMA site and verify",
     _first_node(_set("job_type", "deploy")), "node 'site' (awx.awx.workflow_job_template_node)"),
    ("node links as a mapping", "controller_workflows", "GPUDirect RDMA site and verify",
     _first_node(_set("success_nodes", {"verify": True})), "argument 'success_nodes'"),
    ("workflow without organization", "controller_workflows", "GPUDirect RDMA site and verify",
     lambda item: item.pop("organization"), "requires the workflow's organization"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("variable", "name", "change", "expected"),
    [case[1:] for case in BROKEN_ITEMS],
    ids=[case[0] for case in BROKEN_ITEMS],
)
def test_a_broken_item_is_refused_naming_the_item_and_the_key(variable, name, change, expected):
    (item,) = [item for item in resolved()[variable] if item["name"] == name]
    assert item_errors(variable, item) == []
    change(item)
    errors = item_errors(variable, item)
    assert any(expected in error and repr(name) in error for error in errors), errors


def _question(variable: str, change):
    def apply(survey):
        (question,) = [q for q in survey["spec"] if q["variable"] == variable]
        change(question)

    return apply


SITE = "controller_templates 'GPUDirect RDMA site'"
UNINSTALL = "controller_templates 'GPUDirect RDMA uninstall'"
SITE_AND_VERIFY = "controller_workflows 'GPUDirect RDMA site and verify'"

# (what, the survey it changes, change, what the error names).
BROKEN_SURVEYS = [
    ("type not allowed", SITE, _question("gpudirect_rdma_fabric", _set("type", "dropdown")),
     "(gpudirect_rdma_fabric): type 'dropdown' is not one of"),
    ("required missing", SITE, _question("gpudirect_rdma_interfaces", lambda q: q.pop("required")),
     "(gpudirect_rdma_interfaces): required is missing"),
    ("required as text", SITE, _question("gpudirect_rdma_method", _set("required", "yes")),
     "(gpudirect_rdma_method): required is not a boolean"),
    ("variable missing", SITE, _question("gpudirect_rdma_fabric", lambda q: q.pop("variable")),
     "(None): variable is missing"),
    ("misspelt field", SITE, _question("gpudirect_rdma_ipam_type", _set("defualt", "nv-ipam")),
     "(gpudirect_rdma_ipam_type): defualt is not a question field"),
    ("no choices", SITE, _question("gpudirect_rdma_method", lambda q: q.pop("choices")),
     "(gpudirect_rdma_method): a multiplechoice question needs choices"),
    ("choices not text", SITE, _question("gpudirect_rdma_fabric", _set("choices", [True, False])),
     "(gpudirect_rdma_fabric): choices [True, False] are not a list of text"),
    ("default not a choice", SITE, _question("gpudirect_rdma_ipam_type", _set("default", "dhcp")),
     "(gpudirect_rdma_ipam_type): default 'dhcp' is not one of the choices"),
    ("two defaults", SITE,
     _question("gpudirect_rdma_ipam_type", _set("default", "whereabouts\nnv-ipam")),
     "(gpudirect_rdma_ipam_type): a multiplechoice question has one default"),
    ("min as text", SITE, _question("gpudirect_rdma_ipam_range", _set("min", "9")),
     "(gpudirect_rdma_ipam_range): min is not an integer"),
    ("max as a float", SITE, _question("gpudirect_rdma_interfaces", _set("max", 10.5)),
     "(gpudirect_rdma_interfaces): max is not an integer"),
    ("default too long", SITE, _question("gpudirect_rdma_ipam_gateway", _set("default", "x" * 40)),
     "(gpudirect_rdma_ipam_gateway): default dropped at launch: length 40 is above max 39"),
    ("integer default as text", UNINSTALL,
     _question("uninstall_timeout", _set("default", "1800")),
     "(uninstall_timeout): default '1800' is not an integer"),
    ("boolean integer default", UNINSTALL,
     _question("uninstall_timeout", _set("default", True)),
     "(uninstall_timeout): default dropped at launch: True is not an integer"),
    ("default out of range", UNINSTALL,
     _question("uninstall_timeout", _set("default", 30)),
     "(uninstall_timeout): default dropped at launch: value 30 is below min 60"),
    ("min above max", SITE_AND_VERIFY,
     _question("verify_min_gbps", _set("min", 5000)),
     "(verify_min_gbps): min 5000 is above max 3200"),
    ("reserved default", SITE,
     _question("gpudirect_rdma_ipam_exclude", _set("default", "$encrypted$")),
     "(gpudirect_rdma_ipam_exclude): default '$encrypted$': $encrypted$ is reserved"),
    ("duplicate variable", SITE, lambda s: s["spec"].append(copy.deepcopy(s["spec"][0])),
     "question 12: variable 'gpudirect_rdma_method' is asked twice"),
    ("no questions", SITE, lambda s: s["spec"].clear(), "spec has no questions"),
    ("no name", SITE, lambda s: s.pop("name"), "survey_spec: name is missing"),
    ("description not text", SITE_AND_VERIFY, _set("description", ["a", "b"]),
     "survey_spec: description is not text"),
]  # fmt: skip


@pytest.mark.parametrize(
    ("label", "change", "expected"),
    [case[1:] for case in BROKEN_SURVEYS],
    ids=[case[0] for case in BROKEN_SURVEYS],
)
def test_a_broken_survey_is_refused_naming_the_template_and_the_question(label, change, expected):
    survey = surveys_of(resolved())[label]
    assert survey_errors(label, survey) == []
    change(survey)
    errors = survey_errors(label, survey)
    assert any(expected in error and error.startswith(label) for error in errors), errors
