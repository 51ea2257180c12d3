"""The behaviour report (docs/behaviour.md): rule-based measures, without an LLM, of how the simulated
users, the CRSs and the judges of a run behaved, from the records of its run folder.

Per simulator: first-turn endings, constraints stated, requested attributes asked, target names
leaked, role flips, repetition and parroting, acceptances that contradict the need, stops before any
recommendation. Per CRS: cut messages, text that does not name the recommended item, claims that the
item's metadata contradicts, repetition. Per judge: the spread of scores and their consistency with
what the record says was recommended and asked. Modules: `records` (reading, bad records counted),
`facts` (one dialogue, understood once), `text` (the text rules), `users`, `crs`, `judges` (the
measures), `report` (aggregation, Wilson intervals, the dataframe), `validation` (each rule's
precision and recall against two readers' labels, `crsim validate detectors`).
"""

from crsim.studies.behaviour.observation import MEASURES, Kind, Measure, Observation
from crsim.studies.behaviour.report import (
    BehaviourReport,
    Row,
    behaviour_frame,
    behaviour_of,
    behaviour_report,
    wilson,
)

__all__ = [
    "MEASURES",
    "BehaviourReport",
    "Kind",
    "Measure",
    "Observation",
    "Row",
    "behaviour_frame",
    "behaviour_of",
    "behaviour_report",
    "wilson",
]
