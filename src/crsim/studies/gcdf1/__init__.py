"""GCDF1 (Coca et al.): goal- and context-driven F1 of a simulated user's constraints and requests.

I-GCDF1 asks whether the user stated its goal's constraints (and no others) and R-GCDF1 whether it
requested the goal's information, both at dialogue level, excusing repetitions and out-of-goal
mentions that the conversation explains. Modules, by concern:

- `config`: the evaluator's YAML configuration (thresholds, switches)
- `dialogue`: the input types (goal, turns, actions with kinds) and the MultiWOZ ontology
- `sgd`: reading SGD-style JSON (ConvLab-2 / MultiWOZ 2.1) with located errors
- `canonical`: canonical value map and memoised fuzzy value matching
- `turns`: a dialogue prepared for scoring (normalised actions, canonical parameters)
- `rules`: the conversational patterns, as predicates over turns
- `constraints`, `requests`: I-GCDF1 and R-GCDF1 counting
- `scoring`, `corpus`: F1 per dialogue and domain, corpus means, whole files
- `behaviour`: the behaviour log and its queries
- `adapter`, `evaluator`: crsim dialogues and the `gcdf1` metric; `cli`: `crsim gcdf1`
"""

from crsim.studies.gcdf1.behaviour import Behaviour, BehaviourFile, Event
from crsim.studies.gcdf1.canonical import CanonicalMap, ValueCanonicaliser
from crsim.studies.gcdf1.config import Gcdf1Config, load_config
from crsim.studies.gcdf1.corpus import CorpusResult, score_corpus, score_files
from crsim.studies.gcdf1.dialogue import MULTIWOZ, GoalDialogue, Ontology
from crsim.studies.gcdf1.scoring import PRF, DialogueScores, Gcdf1Scorer, corpus_means, prf
from crsim.studies.gcdf1.sgd import LoadIssue, load_sgd_files, parse_sgd_dialogue

__all__ = [
    "MULTIWOZ",
    "PRF",
    "Behaviour",
    "BehaviourFile",
    "CanonicalMap",
    "CorpusResult",
    "DialogueScores",
    "Event",
    "Gcdf1Config",
    "Gcdf1Scorer",
    "GoalDialogue",
    "LoadIssue",
    "Ontology",
    "ValueCanonicaliser",
    "corpus_means",
    "load_config",
    "load_sgd_files",
    "parse_sgd_dialogue",
    "prf",
    "score_corpus",
    "score_files",
]
