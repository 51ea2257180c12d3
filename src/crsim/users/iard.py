"""Simulated users from IARD seekers: the recommendations they accepted, and their feedback on other movies.

Recipe, one candidate user per IARD dialogue (the package ships the original release,
`crsim/users/iard_data/umap2020_IARD_Cai.json.gz`, 336 ReDial dialogues; another copy can be passed),
read with crsim's IARD reader:

1. *Mapping.* IARD item ids are ReDial movie ids; a movie becomes an item of the domain through
   the items' `extra.redial_id`, else through an exact title-and-year match (as for ReDial users).
   Movies without a unique match are dropped.
2. *Targets.* IARD labels the seeker utterances that accept a recommendation. Each accepts the
   items of the latest recommender utterance with recommendations before it: those the seeker's
   utterance mentions, else all of them (`crsim.eval.annotators.need.answered_items`). These are
   what the seeker was looking for. Up to `max_targets` are drawn, always leaving at least one
   known rating (`target_share` is not used).
3. *Known ratings, from the seeker's feedback where there is any.* A seeker utterance labelled
   ACC rates the items it accepts 5.0; one labelled REJ or CRI-F (and not ACC) rates 1.0 the
   items recommended since the seeker's previous utterance. Movies the seeker names themselves
   ("I did enjoy Annabelle (2014)") get 5.0 when crsim's rule-based understanding of that
   utterance reads them as liked; other movies get no rating. (Checked against the ReDial
   questionnaires of the 38 IARD dialogues in the shipped ReDial test split: label ratings agree
   with the seeker's "liked" answer 70 of 86 times, text likes 25 of 26 times, but text dislikes
   only 3 of 9 times, so those are not used.) Labels win over the text; a target is always 5.0.
4. *Constraints, requests, slot preferences* are derived exactly as for MovieLens users
   (`crsim.users.population.user_from_targets`).

A seeker is eligible with at least one accepted movie in the domain and at least `min_ratings`
rated movies in the domain (targets included); a `min_ratings` left at its MovieLens default is
replaced by 2 (a target plus one known rating). Sampling, extra rounds when `size` exceeds the
eligible seekers, and per-user seeds follow `build_population`.
"""

from __future__ import annotations

from collections.abc import Sequence
from importlib.resources import files
from pathlib import Path

from crsim.datasets.base import convert_dataset
from crsim.datasets.iard import IardParams, IardReader
from crsim.eval.annotators.need import answered_items, recommended_items
from crsim.language.understanding import understand
from crsim.model import annotations as keys
from crsim.model.dialogue import Dialogue, Role, Utterance
from crsim.model.domain import Domain
from crsim.model.mentions import named_items
from crsim.model.user import SimulatedUser
from crsim.users.population import PopulationConfig, Seeker, users_from_seekers
from crsim.users.redial import TitleIndex

LIKED_RATING, DISLIKED_RATING = 5.0, 1.0
#: Rated movies a seeker needs when the config leaves `min_ratings` at its default.
DEFAULT_MIN_RATINGS = 2
_NEGATIVE_LABELS = frozenset({"REJ", "CRI-F"})


def iard_source() -> Path:
    """The original IARD release shipped with crsim (a gzip copy of `umap2020_IARD_Cai.json`)."""
    return Path(str(files("crsim.users") / "iard_data" / "umap2020_IARD_Cai.json.gz"))


def build_iard_population(
    config: PopulationConfig, domain: Domain, seed: int, source: str | Path | None = None
) -> list[SimulatedUser]:
    """`config.size` simulated users from IARD seekers (see the module docstring for the recipe)."""
    source = None if source is None else Path(source)
    seekers = iard_seekers(domain, source)
    return users_from_seekers(
        seekers, config, domain, seed, source="iard", default_min_ratings=DEFAULT_MIN_RATINGS
    )


def iard_seekers(domain: Domain, source: str | Path | None = None) -> list[Seeker]:
    """Seekers with at least one accepted movie in `domain`, in file order."""
    source = None if source is None else Path(source)
    path = source or iard_source()
    reader = IardReader(IardParams())
    names = {item.id: item.display_title for item in reader.items(path)}
    index = TitleIndex.of(domain.items)
    seekers = []
    for dialogue in convert_dataset(reader, path):
        mapping = {m: i for m in _movies(dialogue) if (i := index.find(m, names.get(m))) is not None}
        seeker = _seeker(dialogue, mapping, domain)
        if seeker is not None:
            seekers.append(seeker)
    return seekers


def _movies(dialogue: Dialogue) -> list[str]:
    """Every ReDial movie id the dialogue mentions."""
    found = (m for u in dialogue.utterances for m in named_items(u))
    return list(dict.fromkeys(found))


def _seeker(dialogue: Dialogue, mapping: dict[str, str], domain: Domain) -> Seeker | None:
    """Targets and ratings of one dialogue in domain ids; None without an accepted movie in the domain."""
    from_labels: dict[str, float] = {}
    from_text: dict[str, float] = {}
    targets: list[str] = []
    for position, utterance in enumerate(dialogue.utterances):
        if utterance.role != Role.USER:
            continue
        history = dialogue.utterances[:position]
        labels = keys.annotation(keys.DATASET_LABELS, dialogue, position) or {}
        intents = set(labels.get(keys.LABEL_INTENTS) or ())
        from_labels.update(_label_feedback(intents, utterance, history, domain))
        if labels.get(keys.LABEL_ACCEPTED):
            targets += answered_items(utterance, history, domain)
        from_text.update(_text_feedback(utterance, mapping, domain))
    ratings: dict[str, float] = {}
    redial_ids: dict[str, str] = {}
    for source in (from_text, from_labels, dict.fromkeys(targets, LIKED_RATING)):  # later sources win
        for movie, rating in source.items():
            if movie in mapping:
                ratings[mapping[movie]], redial_ids[mapping[movie]] = rating, movie
    in_domain = list(dict.fromkeys(mapping[m] for m in targets if m in mapping))
    if not in_domain:
        return None
    return Seeker(str(dialogue.metadata["conversation_id"]), ratings, in_domain, redial_ids)


def _label_feedback(
    labels: set[str], utterance: Utterance, history: Sequence[Utterance], domain: Domain
) -> dict[str, float]:
    """ReDial id -> rating from the utterance's IARD intent labels (ACC liked; REJ/CRI-F disliked)."""
    if "ACC" in labels:
        return dict.fromkeys(answered_items(utterance, history, domain), LIKED_RATING)
    if not labels & _NEGATIVE_LABELS:
        return {}
    since: list[str] = []
    for earlier in reversed(history):
        if earlier.role == Role.USER:
            break
        since += recommended_items(earlier, domain)
    return dict.fromkeys(since, DISLIKED_RATING)


def _text_feedback(utterance: Utterance, mapping: dict[str, str], domain: Domain) -> dict[str, float]:
    """ReDial id -> 5.0 for movies the seeker names and, as the rule-based understanding reads it, likes."""
    own = {m: mapping[m] for m in named_items(utterance) if m in mapping}
    if not own:
        return {}
    liked = set(understand(utterance.text, domain).liked_items)
    return {m: LIKED_RATING for m, item in own.items() if item in liked}
