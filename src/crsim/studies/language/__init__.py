"""Analyses of simulated users' language and of judge agreement (RecUserSim §4).

- Measures of one user utterance (`measures`, `formality`, `richness`, `judge`): length in
  words, formality (formal / neutral / informal) and information richness (key points), by rules
  or by an LLM judge, each with a category from configurable `Thresholds`.
- `diversity`: per simulator, the distribution over categories and its normalised entropy;
  `controllability`: the same split by the persona's linguistic pattern, with tests.
- `consistency`: Pearson and Spearman agreement of two scores.jsonl files on the same dialogues.
- `plots` (PNG), `tables` (rich) and `cli` (`analyze_app`, mounted as `crsim analyze`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from crsim.core.lazy import exports

if TYPE_CHECKING:
    from crsim.studies.language.consistency import (
        ConsistencyReport,
        Correlation,
        MetricConsistency,
        consistency,
        consistency_report,
        correlate,
        dialogue_values,
    )
    from crsim.studies.language.diversity import (
        PATTERNS,
        ControllabilityReport,
        Distribution,
        DiversityReport,
        GroupDiversity,
        PatternControl,
        PatternTest,
        controllability,
        distribution,
        diversity,
        normalized_entropy,
    )
    from crsim.studies.language.formality import FormalityRules, classify_formality, formality_cues
    from crsim.studies.language.judge import JudgeSettings, LLMJudge
    from crsim.studies.language.measures import (
        CATEGORIES,
        DialogueMeasures,
        Measure,
        Reading,
        Thresholds,
        UtteranceMeasures,
        word_count,
    )
    from crsim.studies.language.measuring import (
        PATTERN_KEYS,
        LLMMeasurer,
        Measurer,
        RuleMeasurer,
        measure_dialogue,
        measure_dialogues,
        name_groups,
        persona_pattern,
    )
    from crsim.studies.language.richness import KEY_POINT_KINDS, KeyPoint, RuleKeyPoints


#: Public name -> the submodule defining it; imported on first use, so that mounting the CLI does not
#: pull in scipy, the LLM layer and the movie lexicon before a command needs them.
_WHERE = {
    "CATEGORIES": "measures",
    "ConsistencyReport": "consistency",
    "ControllabilityReport": "diversity",
    "Correlation": "consistency",
    "DialogueMeasures": "measures",
    "Distribution": "diversity",
    "DiversityReport": "diversity",
    "FormalityRules": "formality",
    "GroupDiversity": "diversity",
    "JudgeSettings": "judge",
    "KEY_POINT_KINDS": "richness",
    "KeyPoint": "richness",
    "LLMJudge": "judge",
    "LLMMeasurer": "measuring",
    "Measure": "measures",
    "Measurer": "measuring",
    "MetricConsistency": "consistency",
    "PATTERNS": "diversity",
    "PATTERN_KEYS": "measuring",
    "PatternControl": "diversity",
    "PatternTest": "diversity",
    "Reading": "measures",
    "RuleKeyPoints": "richness",
    "RuleMeasurer": "measuring",
    "Thresholds": "measures",
    "UtteranceMeasures": "measures",
    "classify_formality": "formality",
    "consistency": "consistency",
    "consistency_report": "consistency",
    "controllability": "diversity",
    "correlate": "consistency",
    "dialogue_values": "consistency",
    "distribution": "diversity",
    "diversity": "diversity",
    "formality_cues": "formality",
    "measure_dialogue": "measuring",
    "measure_dialogues": "measuring",
    "name_groups": "measuring",
    "normalized_entropy": "diversity",
    "persona_pattern": "measuring",
    "word_count": "measures",
}


__getattr__ = exports(__name__, _WHERE)


__all__ = [
    "CATEGORIES",
    "KEY_POINT_KINDS",
    "PATTERNS",
    "PATTERN_KEYS",
    "ConsistencyReport",
    "ControllabilityReport",
    "Correlation",
    "DialogueMeasures",
    "Distribution",
    "DiversityReport",
    "FormalityRules",
    "GroupDiversity",
    "JudgeSettings",
    "KeyPoint",
    "LLMJudge",
    "LLMMeasurer",
    "Measure",
    "Measurer",
    "MetricConsistency",
    "PatternControl",
    "PatternTest",
    "Reading",
    "RuleKeyPoints",
    "RuleMeasurer",
    "Thresholds",
    "UtteranceMeasures",
    "classify_formality",
    "consistency",
    "consistency_report",
    "controllability",
    "correlate",
    "dialogue_values",
    "distribution",
    "diversity",
    "formality_cues",
    "measure_dialogue",
    "measure_dialogues",
    "name_groups",
    "normalized_entropy",
    "persona_pattern",
    "word_count",
]
