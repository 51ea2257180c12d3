"""The report's Behaviour section (docs/behaviour.md): per run with LLM-driven participants, the
behaviour report's tables of simulators, CRSs and judges, on a seeded sample of a large run."""

from __future__ import annotations

from typing import Any

from crsim.report.collect import RunView, browser_sample
from crsim.report.sections import ReportContext
from crsim.studies.behaviour import MEASURES, BehaviourReport, Kind, behaviour_of, behaviour_report
from crsim.studies.behaviour.attribution import ISSUES_SAMPLE
from crsim.studies.behaviour.records import RunRecords, configured, run_domain
from crsim.studies.behaviour.tables import KIND_TITLES, cell_text

#: The Behaviour section reads at most this many dialogues of a run (as `crsim evaluate` counts the
#: simulator issues): a seeded uniform sample when the run holds more, and the section says so.
BEHAVIOUR_SAMPLE = ISSUES_SAMPLE
BEHAVIOUR_SEED = 0


def _llm_driven(view: RunView) -> bool:
    """Whether a run has participants whose behaviour the section is about: a simulator or CRS that
    called a language model in some dialogue (seen while the report read the dialogues), or scores
    an LLM judge gave."""
    return view.llm_participants or bool(view.judged)


def _behaviour_table(report: BehaviourReport, kind: Kind) -> dict[str, Any] | None:
    """One kind's table for the template: measures as rows, subjects as columns, examples per cell."""
    rows = report.rows_of(kind)
    if not rows:
        return None
    subjects = list(dict.fromkeys(r.subject for r in rows))
    cells = {(r.measure, r.subject): r for r in rows}
    measures = []
    for name in dict.fromkeys(r.measure for r in rows):
        found = [cells.get((name, s)) for s in subjects]
        measures.append(
            {
                "name": name,
                "unit": MEASURES[name].unit,
                "question": MEASURES[name].question,
                "cells": [
                    None if row is None else {"text": cell_text(row), "examples": "\n".join(row.examples)}
                    for row in found
                ],
            }
        )
    spread = [cells[("score_at_max", s)].detail if ("score_at_max", s) in cells else "" for s in subjects]
    return {
        "kind": kind.value,
        "title": KIND_TITLES[kind],
        "subjects": subjects,
        "measures": measures,
        "spread": spread,
    }


def _behaviour_of(view: RunView) -> tuple[BehaviourReport, str]:
    """The behaviour report of a run, of every dialogue when it holds at most `BEHAVIOUR_SAMPLE`,
    else of a seeded uniform sample of that many (and their scores; the rest is never held), with the
    note that says so."""
    total, size = view.total_dialogues, BEHAVIOUR_SAMPLE
    if total <= size:
        return behaviour_report(view.folder.path), ""
    positions = browser_sample(total, size, BEHAVIOUR_SEED) or set()
    dialogues = [d for index, d in enumerate(view.folder.dialogues()) if index in positions]
    ids = {d.id for d in dialogues}
    scores = [record for record in view.folder.scores() if record.dialogue_id in ids]
    caps, rubrics = configured(view.folder.typed_manifest)
    path = view.folder.path
    records = RunRecords(path.resolve().name, run_domain(path, dialogues), dialogues, scores, caps, rubrics)
    return behaviour_of(records), f"{size} of {total} dialogues, sampled with seed {BEHAVIOUR_SEED}"


def behaviour_sections(context: ReportContext) -> list[dict[str, Any]]:
    """Per run with LLM-driven participants: the behaviour report's tables (simulators, CRSs, judges),
    on a sample of runs over `BEHAVIOUR_SAMPLE` dialogues; none for runs of rule-based components only."""
    found = []
    for view in context.views:
        if not _llm_driven(view):
            continue
        report, sampled = _behaviour_of(view)
        tables = [t for kind in Kind if (t := _behaviour_table(report, kind)) is not None]
        found.append(
            {"run": view.label, "tables": tables, "unreadable": len(report.unreadable), "sampled": sampled}
        )
    return found
