"""The engine: run steps of the table (module_utils/steps/) against a cluster.

For each step, in the table's order: install its operator through OLM (olm.py) and take its
Succeeded CSV, build its operand (on that CSV where the step needs one), apply it (apply.py),
remove what the plan no longer has of its kinds, and wait on its gates (wait.py). Before the
first write, the preflight checks (preflight.py) judge the cluster against the plan and every
object it applies: an error stops everything there. Given an earlier run's verdict for the same
plan, only the checks it left skipped are judged again.

Check mode runs the same code without writing: OLM is read, objects are dry-run applied on the
API server (which judges them against their schemas), gates are read once instead of waited on.
What would change and what is not met yet is the run's `work`; a check-mode run with no work is
a converged cluster, which is how site.yml decides, in one module run, that it has nothing to do.
"""

from __future__ import annotations

import contextlib
import time

from ansible_collections.gpudirect.rdma.plugins.module_utils import steps as table
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s import olm, preflight
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.apply import (
    FIELD_MANAGER,
    Applier,
    ForeignObjects,
    Refused,
    adopting,
)
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.client import NotServed
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.progress import SILENT
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.reads import Reads
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.secrets import registry_secret
from ansible_collections.gpudirect.rdma.plugins.module_utils.k8s.wait import (
    GateFailed,
    GateTimeout,
    observe,
    poll_intervals,
    to_gate,
    wait_for,
)

_WOULD = {
    "created": "would be created",
    "updated": "would be updated",
    "deleted": "would be removed",
}


class DiscoveryTimeout(TimeoutError):
    """What a step takes from the cluster (the NIC types of the NicDevices) did not appear."""


class PreflightFailed(Exception):
    """The preflight checks found errors: this module run wrote nothing. written: the steps that
    earlier tasks of the same run applied (the verdict carries them), which the message names, so
    that it never says nothing was written when something was."""

    def __init__(self, findings: list[dict], written: list[str] | None = None):
        self.findings = findings
        errors = sum(1 for f in findings if f["severity"] == "error")
        if written:
            what = (
                f"this step wrote nothing, but earlier steps of this run applied their changes "
                f"({', '.join(written)}); once the errors are fixed, run the playbook again: it "
                "continues from what exists"
            )
        else:
            what = "nothing was written to the cluster"
        super().__init__(
            f"preflight found {errors} error(s); {what}.\n" + "\n".join(preflight.summary(findings))
        )


def _record(step: table.Step) -> dict:
    """What a step's record of a run starts with."""
    return {"step": step.name, "title": step.title, "component": step.component}


class Engine:
    """One module run over one plan: steps run with run(), results collected."""

    def __init__(
        self,
        cluster,
        plan: dict,
        check_mode: bool = False,
        take_over: bool = False,
        settings: dict | None = None,
        login: dict | None = None,
        sleep=time.sleep,
        decided: dict | None = None,
        progress=SILENT,
        replacing: tuple = (),
    ):
        self.cluster = cluster
        self.reads = Reads(cluster)
        self.plan = plan
        self.check_mode = check_mode
        self.take_over = take_over
        self.settings = settings or {}  # step name -> its settings (the engine's names)
        self.login = login
        self.sleep = sleep
        # Hears of every long wait (k8s.progress): a gate, a CSV, a deletion, a discovery.
        self.progress = progress
        self.applier = Applier(self.reads, check_mode, take_over, progress)
        # An earlier run's preflight verdict for this plan (preflight.verdict): only the checks
        # it left skipped are judged again.
        self.decided = decided
        # Preflight checks judged instead of those of the same name (preflight.judge).
        self.replacing = replacing
        self.verdict: dict | None = None
        self.findings: list[dict] = []
        self.steps: list[dict] = []
        self.work: list[str] = []

    # -- before the first write ---------------------------------------------------------------
    def check(self, names: list[str] | None = None) -> list[dict]:
        """The preflight findings of the plan (every object it applies, whichever steps this run
        asks for, so that no step starts what a later one could not finish); PreflightFailed on
        an error. With an earlier verdict, only the checks it left skipped. In check mode, the
        reads of the operators' CSVs that the steps of names judge next are made beside
        preflight's."""
        objects = [o for step in table.STEPS for o in self._objects(step, None)]
        self.findings, self.verdict = preflight.judge(
            self.reads,
            self.plan,
            objects,
            self.take_over,
            self.cluster.server,
            self.decided,
            self.replacing,
            self._csv_lists(names) if self.check_mode and names else (),
        )
        if any(f["severity"] == "error" for f in self.findings):
            raise PreflightFailed(self.findings, (self.decided or {}).get("written"))
        return self.findings

    # -- the steps ----------------------------------------------------------------------------
    def run(self, names: list[str]) -> None:
        self.check(names)
        for name in names:
            self._run_step(table.step(name))

    def survey(self, names: list[str]) -> None:
        """Check mode over the steps, none stopping the others (drift.yml's report of all that
        differs), reading only: a preflight error stays in findings, and a step that cannot be
        judged (OLM refuses, a kind is not served) keeps its error in its record, with what it
        judged before it."""
        if not self.check_mode:
            raise ValueError("a survey runs in check mode only")
        # Reads only: an object that differs is compared, not dry-run applied (a write to the
        # authorizer), so that a read-only role may run it.
        self.applier.server_dry_run = False
        with contextlib.suppress(PreflightFailed):  # its findings are the survey's
            self.check(names)
        for name in names:
            step = table.step(name)
            first = len(self.applier.results)
            try:
                self._run_step(step)
            except (olm.OlmError, Refused, ForeignObjects, NotServed) as error:
                self.steps.append(
                    {
                        **_record(step),
                        "results": self.applier.results[first:],
                        "gates": [],
                        "error": str(error),
                    }
                )

    def _csv_lists(self, names: list[str]) -> tuple[tuple, ...]:
        steps = [table.step(name) for name in names]
        return olm.csv_lists(
            [
                o
                for step in steps
                if step.enabled(self.plan)
                for o in table.operator_objects(self.plan, step)
            ]
        )

    def _settings(self, step: table.Step) -> dict:
        """The step's settings: as given (the role variables), else as the step declares them."""
        declared = {setting.key: setting.default for setting in step.settings}
        return {**declared, **(self.settings.get(step.name) or {})}

    def _objects(
        self, step: table.Step, csv: dict | None, operand_only=False, plan: dict | None = None
    ) -> list[dict]:
        """The step's objects (or its operand only), with the pull Secret of the registry login
        where it has one."""
        plan = plan or self.plan
        objects = (
            step.operand_objects(plan, csv) if operand_only else table.objects(step, plan, csv)
        )
        secret = self.plan.get("image_registry_secret")
        if secret and self.login and any(kind == "Secret" for _a, kind, _n in step.named):
            objects.append(
                registry_secret(
                    secret["name"],
                    secret["namespace"],
                    secret["registry"],
                    self.login["username"],
                    self.login["password"],
                    step.component,
                )
            )
        return objects

    def _run_step(self, step: table.Step) -> None:
        settings = self._settings(step)
        first = len(self.applier.results)
        record = _record(step)
        if not step.enabled(self.plan):
            # Off: what the collection made of its kinds goes (the opt-in was turned off).
            scope = table.prune_scope(step)
            if scope and self._left_a_trace(step):
                self.applier.prune(
                    [],
                    scope["kinds"],
                    settings["ready_timeout"],
                    scope["label_selector"],
                )
            record.update(skipped="off in the plan", results=self.applier.results[first:])
            record["gates"] = []
            self.steps.append(record)
            return
        if step.operator and step.uses_installed:
            used = olm.installed_elsewhere(self.reads, self.plan["operators"][step.operator.key])
            if used:
                record.update(operator={"used": used}, results=[], gates=[])
                self.steps.append(record)
                return
        plan = self._discovered(step, settings)
        csv = None
        if step.operator:
            installed = self._install(step, settings)
            csv = installed["csv"]
            record["operator"] = {k: v for k, v in installed.items() if k != "csv"}
        operand = self._objects(step, csv, operand_only=True, plan=plan)
        if step.clears:
            kinds = table.kind_dicts(step.clears)
            self.applier.prune(
                table.planned(self.plan, step.clears),
                kinds,
                settings["ready_timeout"],
            )
        self.applier.apply(operand)
        scope = table.prune_scope(step)
        if scope:
            self.applier.prune(
                operand,
                scope["kinds"],
                settings["ready_timeout"],
                scope["label_selector"],
            )
        record["results"] = self.applier.results[first:]
        record["gates"] = self._gates(step, settings, record["results"], plan)
        self.steps.append(record)

    def _left_a_trace(self, step: table.Step) -> bool:
        """Whether an opt-in step that is off may have objects to remove (Step.trace)."""
        if not step.trace:
            return True
        api_version, kind, name = step.trace
        return any(o["metadata"]["name"] == name for o in self.reads.owned(api_version, kind))

    def _discovered(self, step: table.Step, settings: dict) -> dict:
        """The plan with what the step takes from the cluster (step.discover); a real run waits
        for it as long as the step's gates would, check mode reports it as work."""
        if not step.discover:
            return self.plan
        if self.check_mode:
            plan, missing = step.discover(self.plan, self.reads.list)
            if missing:
                self.work.append(missing)
            return plan
        timeout = settings["ready_timeout"]
        began = time.monotonic()
        pauses = poll_intervals()
        while True:
            plan, missing = step.discover(self.plan, self.cluster.list)
            if not missing:
                return plan
            if time.monotonic() >= began + timeout:
                raise DiscoveryTimeout(f"{step.title}: {missing}")
            self.progress.waiting(began, timeout, f"{step.title}: {missing}")
            self.sleep(next(pauses))

    def _install(self, step: table.Step, settings: dict) -> dict:
        objects = table.operator_objects(self.plan, step)
        reader = self.reads if self.check_mode else self.cluster
        applier = Applier(
            self.reads,
            self.check_mode,
            self.take_over,
            self.progress,
            self.applier.server_dry_run,
        )
        installed = olm.install(
            reader,
            applier,
            objects,
            settings["install_timeout"],
            self.take_over,
            self.check_mode,
            progress=self.progress,
        )
        self.applier.results.extend(applier.results)
        self.applier.diffs.extend(applier.diffs)
        self.applier.compared.extend(applier.compared)
        if installed["waiting"]:
            self.work.append(installed["waiting"])
        return installed

    def _gates(
        self, step: table.Step, settings: dict, results: list[dict], plan: dict
    ) -> list[dict]:
        """Wait on the step's gates (in check mode: read them once); what each showed."""
        gates = [to_gate(g) for g in step.gates(plan, settings, results)]
        if not gates:
            return []
        stable = settings.get("stable_seconds", 0)
        if self.check_mode and stable:
            # Held for that long, read after read, as the real run would ask; the reads take
            # time too, so the gates get twice that (and a second) to show it.
            try:
                timeout = 2 * stable + 1
                wait_for(self.cluster, gates, timeout=timeout, stable_for=stable, sleep=self.sleep)
            except (GateTimeout, GateFailed) as error:
                self.work.append(str(error))
                return [{"gate": g.name, "met": False} for g in gates]
            return [{"gate": g.name, "met": True} for g in gates]
        if self.check_mode:
            seen = []
            for gate in gates:
                observation = observe(self.reads, gate)
                seen.append({"gate": gate.name, "met": observation.met, "seen": observation.seen})
                if not observation.met:
                    self.work.append(f"gate '{gate.name}' not met: {observation.seen}")
            return seen
        seconds = wait_for(
            self.cluster,
            gates,
            timeout=settings["ready_timeout"],
            stable_for=stable,
            sleep=self.sleep,
            progress=self.progress,
        )
        return [{"gate": g.name, "met": True, "seconds": seconds.get(g.name)} for g in gates]

    # -- what the run found -------------------------------------------------------------------
    @property
    def changed(self) -> bool:
        return self.applier.changed

    def adopted(self) -> list[str]:
        """The objects that held the planned content under another field manager (applied by
        hand or by a GitOps tool from render.yml's tree), each written once to own its fields."""
        return [r["object"] for r in self.applier.results if adopting(r)]

    def adoption_line(self) -> str | None:
        adopted = self.adopted()
        if not adopted:
            return None
        return (
            f"{len(adopted)} object(s) already hold the planned content, applied by another field "
            f"manager: each is applied once, its content unchanged, so that {FIELD_MANAGER} owns "
            "its fields and a later change of the plan can remove one (" + ", ".join(adopted) + ")"
        )

    def object_work(self) -> list[str]:
        lines = []
        for result in self.applier.results:
            if result["action"] == "unchanged" or adopting(result):
                continue
            reasons = "; ".join(result["reasons"])
            lines.append(
                f"{result['object']} {_WOULD.get(result['action'], result['action'])}"
                + (f" ({reasons})" if reasons else "")
            )
        return lines

    def all_work(self) -> list[str]:
        adoption = self.adoption_line()
        return [*self.object_work(), *([adoption] if adoption else []), *self.work]


__all__ = [
    "DiscoveryTimeout",
    "Engine",
    "GateFailed",
    "GateTimeout",
    "PreflightFailed",
]
