"""The declared keys of the open dictionaries of a record: `Utterance.annotations`,
`Dialogue.metadata` and `UserProfile.persona`.

Those dictionaries stay open (converters and other tools put their own keys there), but a key that
one part of crsim writes and another reads is declared here once: its name, its type, who writes it,
who reads it and what it means. Producers write through `Key.put` / `Key.entry` (the value is
checked against the type, and stored exactly as given, so records keep their bytes); consumers read
through `Key.get` or the record helpers `annotation`, `metadata` and `persona`, which return the
parsed value or raise a `DataError` naming the dialogue, the utterance and the key. No other module
spells a declared key as a string (tests/model/test_annotations.py checks src/), and
docs/data-format.md lists every key (checked by the same test). The `Key` machinery is in
`record_keys`, the structured value types in `annotation_values`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Annotated, Any, Literal, TypeVar

from pydantic import AfterValidator, Field, NonNegativeInt, PositiveInt

from crsim.model.annotation_values import (
    CatalogueAnswer,
    DraftCheck,
    ExtractionError,
    HTTPExchange,
    OpenValue,
    ShownItem,
    TargetSplit,
    TurnRatings,
)
from crsim.model.dialogue import Dialogue
from crsim.model.record_keys import DECLARED, Key, Scope, declare

T = TypeVar("T")


class _KnownLabels(OpenValue):
    intents: list[str] | None = None
    top_level: list[str] | None = None
    accepted_recommendation: bool | None = None
    dialogue_acts: list[dict[str, Any]] | None = None


def _known_labels(labels: dict[str, Any]) -> dict[str, Any]:
    """The labels unchanged, once the keys several converters share have their types."""
    _KnownLabels.model_validate(labels)
    return labels


#: Fields of `DatasetLabels` that readers use: the dataset's intent labels, an accepted recommendation.
LABEL_INTENTS = "intents"
LABEL_ACCEPTED = "accepted_recommendation"
#: A dataset's own labels of an utterance: each converter keeps its own keys beside the shared ones.
DatasetLabels = Annotated[dict[str, Any], AfterValidator(_known_labels)]


# --- Utterance.annotations ----------------------------------------------------------------------

A = Scope.ANNOTATION
RATINGS: Key[TurnRatings] = declare(
    "ratings",
    A,
    TurnRatings,
    "{turn: int >= 0, <aspect>: {score, justification, ...}}",
    writers=("sim/recusersim/simulator.py",),
    readers=("eval/metrics/user_ratings.py",),
    description="The user simulator's explicit ratings of the CRS turn it answers (user utterances).",
)
RECOMMENDED_ITEMS_SOURCE: Key[Literal["linked"]] = declare(
    "recommended_items_source",
    A,
    Literal["linked"],
    '"linked"',
    writers=("crs/http/base.py", "runner/loop.py"),
    readers=("runner/loop.py",),
    description="The CRS utterance's item ids were linked from titles in its text, not listed by the CRS.",
)
AMBIGUOUS_LINKS: Key[dict[str, list[str]]] = declare(
    "ambiguous_links",
    A,
    dict[str, Annotated[list[str], Field(min_length=2)]],
    "{item id: [item id, ...] (at least 2)}",
    writers=("crs/http/base.py", "runner/loop.py"),
    readers=("eval/summaries.py",),
    description="Titles linked in the CRS utterance's text that name several catalogue items equally "
    "(same title, nothing in the text telling them apart): linked id -> all of them, the linked one first.",
)
REPLACED_CODE_POINTS: Key[int] = declare(
    "replaced_code_points",
    A,
    PositiveInt,
    "int > 0",
    writers=("crs/http/client.py",),
    readers=("record readers (docs/data-format.md)",),
    description="Characters of a CRS server's reply that could not be written (lone surrogates), replaced "
    "with U+FFFD; absent when 0.",
)
HTTP: Key[HTTPExchange] = declare(
    "http",
    A,
    HTTPExchange,
    "{retries: [ {...} ], message_possibly_resent: bool}",
    writers=("crs/http/client.py",),
    readers=("record readers (docs/crs.md)",),
    description="Retried requests behind one CRS reply; absent when there were none.",
)
CRS_INTENT: Key[str] = declare(
    "intent",
    A,
    str,
    "str",
    writers=("crs/http/moviebot.py",),
    readers=("record readers (docs/plug-in-your-crs.md)",),
    description="The CRS's own intent label of its reply, as its server sent it (MovieBot joins several "
    "with ';', e.g. 'count results;elicit').",
)
CRS_SESSION: Key[str] = declare(
    "crs_session",
    A,
    str,
    "str",
    writers=("crs/http/moviebot.py",),
    readers=("record readers (docs/plug-in-your-crs.md)",),
    description="The id the dialogue had at the CRS server (MovieBot's sender id, which names its export "
    "file), on the first CRS utterance.",
)
ACTS_SOURCE: Key[str] = declare(
    "acts_source",
    A,
    str,
    "str",
    writers=("data/augment/base.py",),
    readers=("data/augment/llm.py", "record readers"),
    description="The act annotator that wrote the utterance's acts (its registry name).",
)
ACTS_ERROR: Key[ExtractionError] = declare(
    "acts_error",
    A,
    ExtractionError,
    "{annotator: str, error: str, raw: str | null}",
    writers=("data/augment/llm.py",),
    readers=("cli/annotate.py",),
    description="The LLM act annotator could not read its answer: no acts, the error and the raw answer.",
)
HUMAN_TURN_LABELS: Key[dict[str, Any]] = declare(
    "human",
    A,
    dict[str, Any],
    "{aspect: label}",
    writers=("data/datasets/crsarena.py",),
    readers=("meta/gold.py",),
    description="CRSArena-Eval crowd labels of an assistant utterance (relevance 0-3, interestingness 0-2).",
)
SELECTED_TARGETS: Key[list[str]] = declare(
    "selected_targets",
    A,
    list[str],
    "[item id]",
    writers=("sim/pepper/biased.py",),
    readers=("record readers (docs/pepper.md)",),
    description="The targets the target-biased user was told about (its opening utterance).",
)
ITEM_INTERFACE: Key[list[ShownItem]] = declare(
    "item_interface",
    A,
    list[ShownItem],
    "[{item: id, seen: bool}]",
    writers=("sim/pepper/simulator.py",),
    readers=("record readers (docs/pepper.md)",),
    description="The recommended items PEPPER's user looked at before this reply, and whether each was seen.",
)
REFLECTED_PREFERENCES: Key[list[dict[str, Any]]] = declare(
    "reflected_preferences",
    A,
    list[dict[str, Any]],
    "[{item, seen, like, dislike | error, raw}]",
    writers=("sim/pepper/simulator.py",),
    readers=("record readers (docs/pepper.md)",),
    description="PEPPER's reflections on the items it looked at (or the error of an unreadable one).",
)
GENERAL_PREFERENCES_NOTE: Key[str] = declare(
    "general_preferences",
    A,
    str,
    "str",
    writers=("sim/pepper/simulator.py",),
    readers=("record readers (docs/pepper.md)",),
    description="PEPPER's general-preferences narrative, on the opening user utterance.",
)
DRAFT_CHECKS: Key[list[DraftCheck]] = declare(
    "draft_checks",
    A,
    list[DraftCheck],
    "[{check: str, action: str, draft?: str, detail?: str}]",
    writers=("sim/shared/checks.py",),
    readers=("record readers (docs/data-format.md)",),
    description="What the LLM user's draft checks found and did on this turn (a re-ask, a fallback, an "
    "end marker ignored, ...); absent when every check passed.",
)

DATASET_LABELS: Key[dict[str, Any]] = declare(
    "labels",
    A,
    DatasetLabels,
    "{intents: [str], top_level: [str], accepted_recommendation: bool, dialogue_acts: [...], ...}",
    writers=("data/datasets/iard.py", "data/datasets/inspired.py", "data/datasets/dialoguekit.py"),
    readers=("eval/metrics/structure.py", "users/iard.py", "data/augment/need_eval.py"),
    description="A converted dataset's own labels of the utterance (intent labels, accepted recommendation).",
)

ANSWERED_FROM_CATALOGUE: Key[list[CatalogueAnswer]] = declare(
    "answered_from_catalogue",
    A,
    list[CatalogueAnswer],
    "[{item: id, slot: str}]",
    writers=("crs/llm.py",),
    readers=("eval/metrics/requests.py (via its text)", "record readers (docs/data-format.md)"),
    description="Requests about a recommended item that the model's message did not answer, answered by "
    "a sentence from the catalogue appended to it (CRS utterances); absent when there were none.",
)


# --- Dialogue.metadata --------------------------------------------------------------------------

M = Scope.METADATA
SEED: Key[int] = declare(
    "seed",
    M,
    int,
    "int",
    writers=("run/batch.py",),
    readers=("report/dataframes.py",),
    description="The dialogue's seed (derived from the run seed and the dialogue's identity).",
)
DOMAIN: Key[str] = declare(
    "domain",
    M,
    str,
    "str",
    writers=("run/batch.py",),
    readers=("record readers", "gcdf1/evaluator.py"),
    description="Name of the run's domain.",
)
TRIAL: Key[int] = declare(
    "trial",
    M,
    NonNegativeInt,
    "int >= 0",
    writers=("run/batch.py",),
    readers=("report/dataframes.py",),
    description="Repetition index of the dialogue (0 first); written only when a run repeats dialogues.",
)
TARGET_SPLIT: Key[TargetSplit] = declare(
    "target_split",
    M,
    TargetSplit,
    "{selected: [id], residual: [id]}",
    writers=("sim/pepper/biased.py",),
    readers=("eval/pepper.py",),
    description="The selected/residual target split the target-biased simulator used.",
)
RECUSERSIM: Key[dict[str, Any]] = declare(
    "recusersim",
    M,
    dict[str, Any],
    "{profile_dictionary, sampled_profile, conflict_resolution, ...}",
    writers=("sim/recusersim/simulator.py",),
    readers=("record readers (docs/recusersim.md)",),
    description="RecUserSim's sampled profile, conflict fixes, discovered preferences and calls by kind.",
)
NEED_SOURCE: Key[str] = declare(
    "information_need_source",
    M,
    str,
    '"rules" | "llm"',
    writers=("data/augment/need.py", "data/augment/llm_need.py"),
    readers=("data/augment/need_eval.py",),
    description="Which extractor wrote the dialogue's information need.",
)
NEED_ERROR: Key[ExtractionError] = declare(
    "information_need_error",
    M,
    ExtractionError,
    "{extractor: str, error: str, raw: str | null}",
    writers=("data/augment/llm_need.py",),
    readers=("cli/annotate.py",),
    description="The LLM need extractor could not read its answer: the error and the raw answer.",
)
UNLINKED_TITLES: Key[list[str]] = declare(
    "information_need_unlinked_titles",
    M,
    list[str],
    "[str]",
    writers=("data/augment/llm_need.py",),
    readers=("record readers (docs/annotation.md)",),
    description="Titles the LLM need extractor named that link to no item of the domain.",
)
ORIGINAL_ID: Key[str] = declare(
    "original_id",
    M,
    str,
    "str",
    writers=("data/datasets/base.py",),
    readers=("record readers (docs/datasets.md)",),
    description="The id a converted dialogue's record gave, when it was renamed to keep ids unique.",
)
ACCEPTED_RECOMMENDATION: Key[list[Any]] = declare(
    "accepted_recommendation",
    M,
    list[Any],
    "[utterance position]",
    writers=("data/datasets/iard.py",),
    readers=("data/augment/need_eval.py",),
    description="IARD: positions of the seeker utterances that accept a recommendation (the gold targets).",
)
HUMAN_DIALOGUE_LABELS: Key[dict[str, Any]] = declare(
    "human",
    M,
    dict[str, Any],
    "{aspect | sentiment: label}",
    writers=("data/datasets/crsarena.py",),
    readers=("meta/gold.py", "fitting/training.py"),
    description="CRSArena crowd labels of the whole dialogue (sentiment, dialogue_overall, ...).",
)

# --- UserProfile.persona ------------------------------------------------------------------------

P = Scope.PERSONA
DESCRIPTION: Key[str] = declare(
    "description",
    P,
    str,
    "str",
    writers=("user files", "other tools"),
    readers=("sim/prompt/prompt_parts.py",),
    description="A free-text persona the LLM user plays instead of the configured one.",
)
SOURCE_USER_ID: Key[str] = declare(
    "source_user_id",
    P,
    str,
    "str",
    writers=("users/pepper.py",),
    readers=("cli/pepper.py",),
    description="The rating table's user the PEPPER user was made from.",
)
RATING_SCALE: Key[tuple[float, float]] = declare(
    "rating_scale",
    P,
    tuple[float, float],
    "[low, high]",
    writers=("users/pepper.py",),
    readers=("sim/pepper/profile.py",),
    description="Lowest and highest rating of the source's rating scale.",
)
PERSONA_TARGET_SPLIT: Key[TargetSplit] = declare(
    "target_split",
    P,
    TargetSplit,
    "{selected: [id], residual: [id]}",
    writers=("users/pepper.py",),
    readers=("sim/pepper/biased.py", "eval/pepper.py"),
    description="The population's selected/residual split of the user's targets.",
)
GOAL_MATCHES: Key[NonNegativeInt] = declare(
    "goal_matches",
    P,
    NonNegativeInt,
    "int",
    writers=("users/goals.py",),
    readers=("record readers (docs/domains.md)",),
    description="How many catalogue items satisfy every constraint of a goal user's need; the targets "
    "are all of them or, beyond users.max_goal_targets, a sample.",
)
REVIEWS: Key[dict[str, str]] = declare(
    "reviews",
    P,
    dict[str, str],
    "{item id: review text}",
    writers=("users/pepper.py",),
    readers=("sim/pepper/profile.py",),
    description="The user's own reviews of seen items (a reviews table source).",
)
TAGS: Key[dict[str, list[str]]] = declare(
    "tags",
    P,
    dict[str, list[str]],
    "{item id: [tag]}",
    writers=("users/pepper.py",),
    readers=("sim/pepper/profile.py", "users/pepper.py"),
    description="The user's own MovieLens tags of seen items.",
)
GENERAL_PREFERENCES: Key[str | list[str] | Any] = declare(
    "general_preferences",
    P,
    Any,
    "str (a list of str or any JSON value is shown as JSON)",
    writers=("sim/pepper/profile.py", "user files"),
    readers=("sim/pepper/profile.py", "eval/judge/transcript.py"),
    description="The user's general preferences as text; the judge shows them, PEPPER plays them.",
)
BINARY_PREFERENCES: Key[dict[str, Any]] = declare(
    "binary_preferences",
    P,
    dict[str, Any],
    "{likes: [str], dislikes: [str]}",
    writers=("sim/pepper/profile.py",),
    readers=("record readers (docs/pepper.md)",),
    description="The likes and dislikes PEPPER derived from the user's ratings or reviews.",
)
SENTENCE_LENGTH: Key[str] = declare(
    "sentence_length",
    P,
    str,
    "str",
    writers=("sim/recusersim/profile.py",),
    readers=("studies/language/measuring.py", "studies/language/diversity.py"),
    description="The linguistic pattern's sentence length (short, medium, long) the user was told to use.",
)
FORMALITY: Key[str] = declare(
    "formality",
    P,
    str,
    "str",
    writers=("sim/recusersim/profile.py",),
    readers=("studies/language/measuring.py", "studies/language/diversity.py"),
    description="The linguistic pattern's formality (informal, neutral, formal).",
)
INFORMATION_RICHNESS: Key[str] = declare(
    "information_richness",
    P,
    str,
    "str",
    writers=("sim/recusersim/profile.py",),
    readers=("studies/language/measuring.py", "studies/language/diversity.py"),
    description="The linguistic pattern's information richness (low, high).",
)
RECUSERSIM_PROFILE: Key[dict[str, Any]] = declare(
    "profile",
    P,
    dict[str, Any],
    "{...RecUserSim profile}",
    writers=("sim/recusersim/simulator.py",),
    readers=("record readers (docs/recusersim.md)",),
    description="The whole RecUserSim profile the user played (after conflict fixes).",
)

#: The persona keys of a linguistic pattern, in the order analyses report them.
PATTERN_KEYS: tuple[Key[str], ...] = (SENTENCE_LENGTH, FORMALITY, INFORMATION_RICHNESS)


# --- reading keys of a record, located -----------------------------------------------------------


def annotation(key: Key[T], dialogue: Dialogue, index: int) -> T | None:
    """The value of an annotation key of utterance `index` (None when absent)."""
    return key.get(
        dialogue.utterances[index].annotations,
        where=f"dialogue {dialogue.id!r}, utterance {index}",
        field_prefix=f"utterances[{index}].",
    )


def metadata(key: Key[T], dialogue: Dialogue) -> T | None:
    """The value of a metadata key of a dialogue (None when absent)."""
    return key.get(dialogue.metadata, where=f"dialogue {dialogue.id!r}")


def persona(key: Key[T], dialogue: Dialogue) -> T | None:
    """The value of a persona key of a dialogue's user profile (None when absent or no profile)."""
    profile = dialogue.user_profile
    return key.get(profile.persona if profile else None, where=f"dialogue {dialogue.id!r}")


def user_persona(key: Key[T], user_id: str, values: Mapping[str, Any]) -> T | None:
    """The value of a persona key of a simulated user (before any dialogue exists)."""
    return key.get(values, where=f"user {user_id!r}")


def schema_table() -> str:
    """The declared keys as the Markdown table of docs/data-format.md (a test keeps the two equal)."""
    lines = ["| key | in | type | written by | read by | meaning |", "|---|---|---|---|---|---|"]
    for key in DECLARED:
        cells = [
            f"`{key.name}`",
            key.scope.value,
            f"`{key.type_name}`".replace("|", "\\|"),
            ", ".join(key.writers),
            ", ".join(key.readers),
            key.description.replace("|", "\\|"),
        ]
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"
