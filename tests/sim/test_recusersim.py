"""`recusersim`: profile sampling and conflict resolution, memory and excitation, Rating-Action-Response,
refinement tools, call counting, the stable prompt prefix, and the `user_ratings` evaluator.

The scripted provider stands in for the model: `Answers` answers by the JSON schema asked for (or,
for free text, by the task's wording), so each test states only what matters to it.
"""

from __future__ import annotations

import asyncio
import json
import random
from collections import Counter
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from scipy import stats

from crsim.core.components import BuildContext
from crsim.core.errors import ConfigError
from crsim.crs.base import BaseCRS, CRSReply, CRSSession
from crsim.crs.retrieval import RetrievalCRS
from crsim.eval.metrics.base import metric_registry
from crsim.eval.metrics.user_ratings import UserRatings
from crsim.eval.run_scoring import EvaluateOptions, evaluate_path
from crsim.llm.providers.scripted import ScriptedProvider
from crsim.llm.types import Completion, Message, ResolvedGeneration
from crsim.model.dialogue import Dialogue, Role, TerminationReason
from crsim.model.domain import Domain
from crsim.model.io import iter_dialogues
from crsim.model.user import InformationNeed, SimulatedUser, SlotPreferences, UserProfile
from crsim.runner.batch import run_batch
from crsim.runner.build import build_experiment
from crsim.runner.config import ExperimentConfig, load_config
from crsim.runner.loop import run_dialogue
from crsim.sim.base import simulator_registry
from crsim.sim.recusersim.actions import UserAction, get_action, register_action
from crsim.sim.recusersim.memory import Memory
from crsim.sim.recusersim.profile import (
    ProfileDictionary,
    apply_fixes,
    load_dictionary,
    sample_profile,
)
from crsim.sim.recusersim.refine import count_words
from crsim.sim.recusersim.simulator import RecUserSim
from crsim.studies.language.measures import word_count
from support import ScriptedHub

CONFIG = Path(__file__).parents[2] / "configs" / "recusersim.yaml"
LONG = (
    "I would really love to watch a gripping thriller tonight with a clever plot and a strong cast. " * 2
).strip()
SHORT = "A thriller, please."


def json_answers(**overrides: Any) -> dict[str, Any]:
    answers: dict[str, Any] = {
        "ProfileConflicts": {"changes": []},
        "LanguageRating": {"justification": "clear and natural", "score": 4},
        "ActionRating": {"justification": "it asked a fitting question", "score": 3},
        "RecommendationRating": {"justification": "fits my genre", "objective": 3, "modifier": 0.5},
        "Excitation": {"reasoning": "not my usual", "agreeable": False, "new_preference": ""},
        "ActionSelection": {"reasoning": "I want more", "actions": ["clarify_preference"]},
        "FormalityAnswer": {"reason": "plain words", "level": "neutral"},
        "KeyPoints": {"key_points": ["thriller"]},
    }
    answers.update(overrides)
    return answers


class Answers:
    """A scripted model: JSON by schema title (a value may be a list, answered in turn, or raw text),
    free text by the task (reply, or rewrite per refiner)."""

    def __init__(
        self, reply: str = SHORT, rewrite: str = "Rewritten message.", **json_overrides: Any
    ) -> None:
        self.json = json_answers(**json_overrides)
        self.reply, self.rewrite = reply, rewrite
        self.asked: Counter[str] = Counter()

    def __call__(self, messages: list[Message], generation: ResolvedGeneration) -> str:
        if generation.json_schema is not None:
            title = generation.json_schema["title"]
            self.asked[title] += 1
            answer = self.json[title]
            if isinstance(answer, list):
                answer = answer.pop(0) if len(answer) > 1 else answer[0]
            return answer if isinstance(answer, str) else json.dumps(answer)
        task = messages[-1]["content"]
        kind = "rewrite" if "Rewrite it" in task else "reply"
        self.asked[kind] += 1
        return self.rewrite if kind == "rewrite" else self.reply


def simulator(
    answers: Callable[[list[Message], ResolvedGeneration], str], domain: Domain, **args: Any
) -> tuple[RecUserSim, ScriptedProvider]:
    provider = ScriptedProvider(answers)
    params = simulator_registry.params("recusersim", args)
    return RecUserSim(params, BuildContext(domain, ScriptedHub(provider), 3)), provider  # type: ignore[arg-type]


def fan() -> SimulatedUser:
    return SimulatedUser(
        id="u1",
        profile=UserProfile(preferences={"actor": SlotPreferences(likes=["Keanu Reeves"])}),
        need=InformationNeed(constraints={"genre": "sci-fi"}, targets=["2571"]),
    )


def profile_of(sim: RecUserSim, **traits: str) -> None:
    """Force traits on the sampled profile before the dialogue (tests of style-dependent behaviour)."""
    assert sim.memory is not None
    sim.memory.profile = sim.memory.profile.model_copy(
        update={"traits": sim.memory.profile.traits.model_copy(update=traits)}
    )


MATRIX = CRSReply("You might like The Matrix (1999).", recommended_items=["2571"])


class Recommends(BaseCRS):
    """Recommends The Matrix every turn."""

    async def respond(self, session: CRSSession, text: str) -> CRSReply:
        return MATRIX


# --- profile --------------------------------------------------------------------------------------


def test_profile_sampling_follows_the_priors_chi_square_on_10000_profiles() -> None:
    dictionary = load_dictionary("movies")
    rng = random.Random(11)
    profiles = [sample_profile(dictionary, rng) for _ in range(10_000)]
    checks = {
        "sentence_length": (dictionary.traits.sentence_length, [p.traits.sentence_length for p in profiles]),
        "formality": (dictionary.traits.formality, [p.traits.formality for p in profiles]),
        "action_pattern": (dictionary.traits.action_pattern, [p.traits.action_pattern for p in profiles]),
        "occupation": (dictionary.basic["occupation"].values, [p.basic["occupation"] for p in profiles]),
        "watching_with": (
            dictionary.environment["watching_with"].values,
            [p.environment["watching_with"] for p in profiles],
        ),
    }
    for name, (priors, drawn) in checks.items():
        counts = Counter(drawn)
        total = sum(priors.values())
        observed = [counts[v] for v in priors]
        expected = [10_000 * w / total for w in priors.values()]
        assert stats.chisquare(observed, expected).pvalue > 0.001, name
        uniform = [10_000 / len(priors)] * len(priors)  # wrong priors must be caught by the same test
        assert stats.chisquare(observed, uniform).pvalue < 1e-6, name
    genres = [p.preferences["favourite_genres"] for p in profiles]
    assert all(len(g) == 2 and g[0] != g[1] for g in genres)  # pick: 2 draws distinct values


def test_the_same_seed_gives_the_same_profile_and_the_restaurant_dictionary_samples_too() -> None:
    movies = load_dictionary("movies")
    assert sample_profile(movies, random.Random(4)) == sample_profile(movies, random.Random(4))
    restaurant = sample_profile(load_dictionary("restaurants"), random.Random(4))
    assert restaurant.domain == "restaurants" and len(restaurant.preferences["cuisines"]) == 2


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda d: d["basic"]["age_group"]["values"].update({"18-24": -1}), "field 'basic.age_group.values'"),
        (
            lambda d: d["action_patterns"]["decisive"]["tendencies"].update({"fly_away": "often"}),
            "field 'action_patterns.decisive.tendencies.fly_away': unknown user action 'fly_away'",
        ),
        (
            lambda d: d["traits"]["action_pattern"].update({"grumpy": 1}),
            "field 'traits.action_pattern.grumpy'",
        ),
        (lambda d: d["traits"]["formality"].update({"posh": 1}), "field 'traits.formality.posh"),
        (
            lambda d: d["preferences"]["favourite_genres"].update({"pick": 99}),
            "field 'preferences.favourite_genres'",
        ),
    ],
)
def test_a_bad_profile_dictionary_names_file_and_field(
    edit: Callable[[dict[str, Any]], None], message: str, tmp_path: Path
) -> None:
    import yaml

    data = yaml.safe_load(
        (Path(__file__).parents[2] / "src/crsim/sim/recusersim/profiles/movies.yaml").read_text()
    )
    edit(data)
    path = tmp_path / "broken.yaml"
    path.write_text(yaml.safe_dump(data))
    with pytest.raises(ConfigError, match=r"broken\.yaml") as caught:
        load_dictionary(str(path))
    assert message in str(caught.value)
    with pytest.raises(ConfigError, match=r"simulators\[0\]\.args\.profile: .*broken.yaml"):
        simulator_registry.params("recusersim", {"profile": str(path)}, where="simulators[0]")


def test_an_unknown_action_name_is_a_located_config_error() -> None:
    with pytest.raises(ConfigError, match=r"args\.actions.*actions\[1\]: unknown user action 'dance'"):
        simulator_registry.params(
            "recusersim", {"actions": ["end_conversation", "dance"]}, where="simulators[0]"
        )
    with pytest.raises(ConfigError, match="unknown refinement tool 'spelling'"):
        simulator_registry.params("recusersim", {"refinements": ["length", "spelling"]})


def test_conflict_fixes_are_applied_only_when_valid_and_all_are_recorded() -> None:
    dictionary = load_dictionary("movies")
    profile = sample_profile(dictionary, random.Random(1))
    genres = profile.values_of("preferences.favourite_genres")
    proposals = [
        {"attribute": "preferences.favourite_genres", "old_value": genres[0], "new_value": "war",
         "reason": "r1"},
        {"attribute": "basic.age_group", "old_value": "99", "new_value": "18-24", "reason": "r2"},
        {"attribute": "preferences.era", "old_value": profile.values_of("preferences.era")[0],
         "new_value": "the future", "reason": "r3"},
        {"attribute": "preferences.disliked", "old_value": profile.values_of("preferences.disliked")[0],
         "new_value": "none", "reason": "r4"},
    ]  # fmt: skip
    fixed, record = apply_fixes(profile, dictionary, proposals)
    assert [r.applied for r in record] == [True, False, False, True]
    assert "not a value of basic.age_group" in (record[1].rejected or "")
    assert "not in the dictionary" in (record[2].rejected or "")
    assert fixed.values_of("preferences.favourite_genres") == [genres[1], "war"]
    assert "disliked" not in fixed.preferences and profile.values_of(
        "preferences.disliked"
    )  # original untouched


async def test_conflict_resolution_is_recorded_in_the_dialogue(domain: Domain) -> None:
    user = fan()
    dictionary = load_dictionary("movies")
    seed_profile = sample_profile(dictionary, random.Random(_profile_seed(user.id)))
    old = seed_profile.values_of("preferences.favourite_genres")[0]
    change = {"reason": "wants sci-fi", "attribute": "preferences.favourite_genres", "old_value": old,
              "new_value": "sci-fi" if old != "sci-fi" else "drama"}  # fmt: skip
    answers = Answers(ProfileConflicts={"changes": [change]})
    sim, provider = simulator(answers, domain, refinements=[])
    dialogue = await _dialogue(sim, user, max_turns=1)
    resolution = dialogue.metadata["recusersim"]["conflict_resolution"]
    assert resolution["changed"] == ["preferences.favourite_genres"]
    assert resolution["changes"][0]["reason"] == "wants sci-fi"
    assert dialogue.metadata["recusersim"]["sampled_profile"]["preferences"]["favourite_genres"][0] == old
    persona = dialogue.user_profile.persona if dialogue.user_profile else {}
    assert change["new_value"] in persona["profile"]["preferences"]["favourite_genres"]
    assert {persona[k] for k in ("sentence_length", "formality", "information_richness")} <= {
        "short", "medium", "long", "formal", "neutral", "informal", "low", "high",
    }  # fmt: skip
    assert change["new_value"] in provider.requests[-1][0][0]["content"]  # the corrected profile is played
    first = dialogue.by(Role.USER)[0]
    assert first.annotations["llm_calls_by_kind"] == {"profile": 1, "response": 1}


async def test_an_unreadable_resolution_keeps_the_sampled_profile_with_the_error(domain: Domain) -> None:
    sim, _ = simulator(Answers(ProfileConflicts="no idea"), domain, refinements=[])
    dialogue = await _dialogue(sim, fan(), max_turns=1)
    resolution = dialogue.metadata["recusersim"]["conflict_resolution"]
    assert resolution["raw"] == "no idea" and "unreadable" in resolution["error"]
    assert dialogue.by(Role.USER)[0].annotations["llm_calls_by_kind"]["profile"] == 2  # answer + one repair


def _profile_seed(user_id: str) -> int:
    from crsim.core.seeding import derive_seed

    return derive_seed(0, "recusersim-profile", user_id)


async def _dialogue(sim: RecUserSim, user: SimulatedUser, *, max_turns: int, crs: Any = None) -> Dialogue:
    domain = sim.domain
    crs = crs or RetrievalCRS(RetrievalCRS.Params(), BuildContext(domain))
    return await run_dialogue(
        sim, crs, user, dialogue_id="d", session=CRSSession("d", 1), max_turns=max_turns, items=domain.items
    )


# --- memory and excitation -----------------------------------------------------------------------


async def test_excitation_stores_a_discovered_preference_and_later_prompts_use_it(domain: Domain) -> None:
    excited = {"reasoning": "never tried it", "agreeable": True, "new_preference": "mind-bending plots"}
    answers = Answers(Excitation=excited)
    sim, provider = simulator(answers, domain, refinements=[])
    await sim.start(fan(), CRSReply("Hi! What would you like?"))
    assert sim.memory is not None
    sim.memory.profile.preferences.clear()  # nothing known about the item: it is a candidate
    sim.memory.need = sim.memory.need.__class__(constraints=[], requests=[], targets=[])
    turn = await sim.respond(MATRIX)
    assert turn.annotations["excitation"]["discovered"] is True
    assert turn.annotations["excitation"]["item_id"] == "2571"
    assert [d.preference for d in sim.memory.discovered] == ["mind-bending plots"]
    before = len(provider.requests)
    await sim.respond(CRSReply("Anything else?"))
    later = [m[-1]["content"] for m, _ in provider.requests[before:]]
    decisions = [t for t in later if "Decide what you do next" in t or "In your next message" in t]
    assert len(decisions) == 2 and all("mind-bending plots" in task for task in decisions)
    assert sim.dialogue_notes().metadata["recusersim"]["discovered_preferences"][0]["item_id"] == "2571"


def test_only_items_outside_the_known_preferences_are_excitation_candidates(domain: Domain) -> None:
    profile = sample_profile(load_dictionary("movies"), random.Random(2))
    profile.preferences["favourite_genres"] = ["sci-fi"]
    from crsim.sim.shared.conversation import NeedView

    memory = Memory(profile, NeedView(constraints=[], requests=[], targets=[]))
    assert memory.excitation_candidate(["2571"], domain.items) is None  # The Matrix is sci-fi: known
    profile.preferences["favourite_genres"] = ["western"]
    found = memory.excitation_candidate(["2571"], domain.items)
    assert found is not None and found.id == "2571"


# --- Rating-Action-Response ----------------------------------------------------------------------


async def test_a_whole_turn_rates_acts_responds_and_counts_its_calls(domain: Domain) -> None:
    answers = Answers(
        ActionSelection={"reasoning": "not quite", "actions": ["negative_feedback", "clarify_preference"]},
        KeyPoints={"key_points": ["a"]},
    )
    sim, provider = simulator(answers, domain)
    await sim.start(fan(), CRSReply("Hi! What would you like?"))
    profile_of(sim, sentence_length="short", formality="neutral", information_richness="low")
    turn = await sim.respond(MATRIX)
    ratings = turn.annotations["ratings"]
    assert ratings["turn"] == 1
    assert ratings["language"] == {"justification": "clear and natural", "score": 4}
    assert ratings["recommendation"]["score"] == 3.5  # objective 3 + modifier 0.5
    assert turn.annotations["actions"] == ["negative_feedback", "clarify_preference"]
    assert turn.text == SHORT and not turn.end
    calls = turn.annotations["llm_calls_by_kind"]
    assert calls == {"rating": 3, "action": 1, "response": 1, "judge_richness": 1, "judge_formality": 1}
    assert turn.annotations["refinements_fired"] == []
    # the response prompt carries ratings as words, the chosen actions and the style
    response_task = [
        m[-1]["content"] for m, g in provider.requests if "In your next message" in m[-1]["content"]
    ][-1]
    assert "its wording was good and clear" in response_task
    assert get_action("negative_feedback").instruction in response_task
    assert "at most 20 words" in response_task


async def test_rating_justification_comes_before_the_score_and_recommendation_only_when_recommended(
    domain: Domain,
) -> None:
    answers = Answers()
    sim, provider = simulator(answers, domain, refinements=[])
    await sim.start(fan(), CRSReply("Hi!"))
    turn = await sim.respond(CRSReply("Which genre do you like?"))
    assert set(turn.annotations["ratings"]) == {"turn", "language", "action"}
    schemas = [
        g.json_schema for _, g in provider.requests if g.json_schema and "Rating" in g.json_schema["title"]
    ]
    assert schemas and all(next(iter(s["properties"])) == "justification" for s in schemas)


async def test_an_unreadable_rating_is_an_error_value_with_the_raw_text(domain: Domain) -> None:
    sim, _ = simulator(Answers(LanguageRating="five stars!"), domain, refinements=[])
    await sim.start(fan(), CRSReply("Hi!"))
    turn = await sim.respond(MATRIX)
    language = turn.annotations["ratings"]["language"]
    assert (
        language["score"] is None and language["raw"] == "five stars!" and "unreadable" in language["error"]
    )
    assert turn.annotations["llm_calls_by_kind"]["rating"] == 4  # 3 questions + 1 repair
    values = await UserRatings().evaluate(
        Dialogue(id="x", utterances=[_user_utterance({"ratings": turn.annotations["ratings"]})])
    )
    by_aspect = {v.aspect: v for v in values}
    assert by_aspect["language"].value is None and by_aspect["language"].raw == "five stars!"
    assert by_aspect["recommendation"].value == 3.5 and by_aspect["recommendation"].turn == 1


def _user_utterance(annotations: dict[str, Any]) -> Any:
    from crsim.model.dialogue import Utterance

    return Utterance(role=Role.USER, text="hi", annotations=annotations)


class Slow(ScriptedProvider):
    """A scripted provider whose answers take a moment; `peak` is the most calls in flight at once."""

    def __init__(self, answers: Answers) -> None:
        super().__init__(answers)
        self.inflight = self.peak = 0

    async def complete(self, messages: list[Message], generation: ResolvedGeneration) -> Completion:
        self.inflight += 1
        self.peak = max(self.peak, self.inflight)
        await asyncio.sleep(0.02)
        self.inflight -= 1
        return await super().complete(messages, generation)


async def test_rating_and_excitation_calls_run_concurrently(domain: Domain) -> None:
    answers = Answers(Excitation={"reasoning": "r", "agreeable": False, "new_preference": ""})
    provider = Slow(answers)
    params = simulator_registry.params("recusersim", {"refinements": []})
    sim = RecUserSim(params, BuildContext(domain, ScriptedHub(provider), 3))  # type: ignore[arg-type]
    await sim.start(fan(), CRSReply("Hi!"))
    assert sim.memory is not None
    sim.memory.profile.preferences.clear()
    sim.memory.need = sim.memory.need.__class__(constraints=[], requests=[], targets=[])
    provider.peak = 0
    turn = await sim.respond(MATRIX)
    assert turn.annotations["llm_calls_by_kind"]["excitation"] == 1
    assert provider.peak == 4  # three ratings and the excitation question at once


async def test_every_call_of_a_dialogue_shares_one_system_message_and_the_conversation_prefix(
    domain: Domain,
) -> None:
    sim, provider = simulator(Answers(reply=LONG), domain)
    await _dialogue(sim, fan(), max_turns=3)
    dialogue_calls = [
        m for m, g in provider.requests if (g.json_schema or {}).get("title") != "ProfileConflicts"
    ]
    assert len({m[0]["content"] for m in dialogue_calls}) == 1
    last_turn = [m[-1]["content"] for m in dialogue_calls[-4:]]
    prefix = last_turn[0].split("\n\n")[0]
    assert prefix.startswith("The conversation so far") and all(t.startswith(prefix) for t in last_turn)


async def test_action_tendencies_follow_the_action_pattern(domain: Domain) -> None:
    sim, provider = simulator(Answers(), domain, refinements=[])
    await sim.start(fan(), CRSReply("Hi!"))
    profile_of(sim, action_pattern="indecisive")
    await sim.respond(MATRIX)
    task = next(
        m[-1]["content"]
        for m, g in provider.requests
        if g.json_schema and g.json_schema["title"] == "ActionSelection"
    )
    assert "- inquire_attribute: ask about details" in task
    assert "(as a indecisive user you do this often)" in task.split("- inquire_attribute")[1].split("\n")[0]
    assert "you do this rarely" in task.split("- end_conversation")[1].split("\n")[0]


async def test_feedback_actions_need_a_recommendation_and_a_registered_action_can_be_used(
    domain: Domain,
) -> None:
    register_action(
        UserAction("ask_for_trailer", "ask for a trailer link", "Ask whether there is a trailer.")
    )
    answers = Answers(ActionSelection={"reasoning": "r", "actions": ["ask_for_trailer", "chit_chat"]})
    sim, provider = simulator(
        answers,
        domain,
        refinements=[],
        actions=["request_recommendation", "positive_feedback", "chit_chat", "ask_for_trailer"],
    )
    await sim.start(fan(), CRSReply("Hi!"))
    turn = await sim.respond(CRSReply("What genre?"))
    schema = next(
        g.json_schema
        for _, g in provider.requests
        if g.json_schema and g.json_schema["title"] == "ActionSelection"
    )
    assert schema is not None
    allowed = schema["properties"]["actions"]["items"]["enum"]
    assert "positive_feedback" not in allowed and "ask_for_trailer" in allowed  # nothing recommended yet
    assert turn.annotations["actions"] == ["ask_for_trailer", "chit_chat"]
    assert "Ask whether there is a trailer." in provider.requests[-1][0][-1]["content"]


async def test_ending_the_conversation_ends_the_dialogue_without_refinement(domain: Domain) -> None:
    answers = Answers(
        ActionSelection={"reasoning": "found it", "actions": ["positive_feedback", "end_conversation"]},
        reply=LONG,
    )
    sim, _ = simulator(answers, domain)
    dialogue = await _dialogue(sim, fan(), max_turns=5, crs=Recommends())
    assert dialogue.termination is not None and dialogue.termination.reason == TerminationReason.USER_ENDED
    last = dialogue.by(Role.USER)[-1]
    assert last.annotations["refinement"].startswith("skipped")
    assert not any(k.startswith(("judge_", "refine_")) for k in last.annotations["llm_calls_by_kind"])


async def test_an_unreadable_action_choice_ends_the_dialogue_with_the_raw_answer(domain: Domain) -> None:
    sim, _ = simulator(Answers(ActionSelection="dunno"), domain, refinements=[])
    dialogue = await _dialogue(sim, fan(), max_turns=3)
    assert dialogue.termination is not None and dialogue.termination.error is not None
    assert dialogue.termination.error.type == "LLMOutputError"
    assert (
        "action selection" in dialogue.termination.error.message
        and "dunno" in dialogue.termination.error.message
    )


# --- refinement ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("length", "reply", "fires"), [("short", LONG, True), ("short", SHORT, False), ("long", SHORT, True)]
)
async def test_the_length_refiner_runs_only_when_the_rule_judge_finds_the_length_off(
    domain: Domain, length: str, reply: str, fires: bool
) -> None:
    answers = Answers(reply=reply, rewrite="Rewritten.")
    sim, provider = simulator(answers, domain, refinements=["length"])
    await sim.start(fan(), CRSReply("Hi!"))
    profile_of(sim, sentence_length=length)
    provider.requests.clear()
    turn = await sim.respond(CRSReply("Which genre?"))
    (outcome,) = turn.annotations["refinement"]
    assert outcome["tool"] == "length" and outcome["target"] == length and outcome["refined"] is fires
    assert outcome["measure"] == count_words(reply)
    assert turn.annotations["llm_calls_by_kind"].get("refine_length", 0) == int(fires)
    assert turn.text == ("Rewritten." if fires else reply)
    if fires:
        assert turn.annotations["draft"] == reply and turn.annotations["refinements_fired"] == ["length"]
        task = provider.requests[-1][0][-1]["content"]
        assert ("at most 20 words" if length == "short" else "more than 40 words") in task


async def test_formality_and_richness_refiners_follow_their_llm_judges(domain: Domain) -> None:
    answers = Answers(
        FormalityAnswer={"reason": "slang", "level": "informal"},
        KeyPoints={"key_points": ["genre", "mood", "company", "time"]},
    )
    sim, provider = simulator(answers, domain, refinements=["richness", "formality"])
    await sim.start(fan(), CRSReply("Hi!"))
    profile_of(sim, formality="formal", information_richness="low")
    provider.requests.clear()
    turn = await sim.respond(CRSReply("Which genre?"))
    richness, formality = turn.annotations["refinement"]
    assert (richness["found"], richness["measure"], richness["refined"]) == ("high", 4, True)
    assert (formality["found"], formality["refined"]) == ("informal", True)
    assert turn.annotations["llm_calls_by_kind"]["refine_formality"] == 1
    assert turn.annotations["llm_calls_by_kind"]["refine_richness"] == 1
    # the judges first ran concurrently on the draft; richness changed it, so formality was judged again
    assert formality["rejudged"] is True and "rejudged" not in richness
    assert turn.annotations["llm_calls_by_kind"]["judge_formality"] == 2
    rewrites = [m[-1]["content"] for m, g in provider.requests if "Rewrite it" in m[-1]["content"]]
    assert "at most 2 pieces of information" in rewrites[0] and "Rewrite it formally" in rewrites[1]


async def test_an_unreadable_judge_leaves_the_draft_and_refinement_can_be_switched_off(
    domain: Domain,
) -> None:
    sim, _ = simulator(Answers(FormalityAnswer="formal-ish"), domain, refinements=["formality"])
    await sim.start(fan(), CRSReply("Hi!"))
    turn = await sim.respond(CRSReply("Which genre?"))
    (outcome,) = turn.annotations["refinement"]
    assert outcome["found"] is None and outcome["raw"] == "formal-ish" and turn.text == SHORT
    off, _provider = simulator(Answers(reply=LONG), domain, refinements=[])
    await off.start(fan(), CRSReply("Hi!"))
    turn = await off.respond(CRSReply("Which genre?"))
    assert "refinement" not in turn.annotations and turn.text == LONG.strip()


def test_the_length_judge_counts_words_as_the_analysis_does() -> None:
    for text in ("Don't stop, it's feel-good!", "two  words", "I'd like 3 films... ok?", "émigré café", ""):
        assert count_words(text) == word_count(text)


# --- a whole run, crsim evaluate's user ratings, the shipped config --------------------------------


def test_a_run_records_ratings_and_crsim_evaluate_reports_their_averages(tmp_path: Path) -> None:
    answers = Answers(
        ActionSelection=[
            {"reasoning": "more", "actions": ["request_recommendation"]},
            {"reasoning": "done", "actions": ["end_conversation"]},
        ],
    )
    config = ExperimentConfig.model_validate(
        {
            "users": {"size": 2},
            "simulators": [{"name": "recusersim", "args": {"refinements": ["length"]}}],
            "crss": [{"name": "popular"}, {"name": "retrieval"}],
            "max_turns": 4,
            "llm": {"default": {"provider": "scripted", "replies": ["x"]}, "cache": {"mode": "off"}},
            "metrics": [{"name": "turns"}, {"name": "user_ratings"}],
            "out": str(tmp_path / "run"),
        }
    )
    experiment = build_experiment(config)
    for llm_role in ("user", "annotator"):
        experiment.llms.role(llm_role).provider = ScriptedProvider(Answers(**{**answers.json}))
    asyncio.run(run_batch(experiment, tmp_path / "run"))
    dialogues = list(iter_dialogues(tmp_path / "run" / "dialogues.jsonl"))
    assert len(dialogues) == 4 and all(d.termination and d.termination.error is None for d in dialogues)
    result = evaluate_path(tmp_path / "run", EvaluateOptions(annotator="none"))
    for summary in result.summaries:
        assert summary.metrics["user_ratings/language"].mean == 4.0
        assert summary.metrics["user_ratings/action"].mean == 3.0
    assert metric_registry.get("user_ratings") is UserRatings


def test_the_shipped_config_validates() -> None:
    config = load_config(CONFIG)
    assert [s.name for s in config.simulators] == ["recusersim"]
    assert {c.name for c in config.crss} == {"popular", "retrieval"}
    assert any(m.name == "user_ratings" for m in config.metrics)
    assert isinstance(load_dictionary("movies"), ProfileDictionary)


async def test_the_action_answer_can_leave_out_its_reason(domain: Domain) -> None:
    sim, provider = simulator(
        Answers(ActionSelection={"actions": ["clarify_preference"]}),
        domain,
        refinements=[],
        action_reason=False,
    )
    await sim.start(fan(), CRSReply("Hi!"))
    turn = await sim.respond(CRSReply("Which genre?"))
    assert (
        turn.annotations["actions"] == ["clarify_preference"] and "action_reasoning" not in turn.annotations
    )
    schema = next(
        g.json_schema
        for _, g in provider.requests
        if g.json_schema and g.json_schema["title"] == "ActionSelection"
    )
    assert schema is not None and list(schema["properties"]) == ["actions"]


def test_length_refinement_makes_the_controllability_analysis_see_the_intended_direction(
    tmp_path: Path,
) -> None:
    """The mechanism end to end: drafts are always long; the length refiner, when the rule judge
    fires, rewrites to the range it is asked for; `crsim analyze` then finds the sentence-length
    pattern moving message length the intended way (persona read from the records)."""
    from crsim.studies.language.diversity import controllability
    from crsim.studies.language.measures import Thresholds
    from crsim.studies.language.measuring import RuleMeasurer, measure_dialogues

    def answer(messages: list[Message], generation: ResolvedGeneration) -> str:
        task = messages[-1]["content"]
        if "at most 20 words" in task and "Rewrite it" in task:
            return "Just a fun thriller, please."
        if "between 21 and 40 words" in task and "Rewrite it" in task:
            return " ".join(["I would like a tense thriller with a clever twist for tonight."] * 2)
        return Answers(reply=LONG + " " + LONG)(messages, generation)

    config = ExperimentConfig.model_validate(
        {
            "users": {"size": 30},
            "simulators": [
                {"name": "recusersim", "args": {"refinements": ["length"], "resolve_conflicts": False}}
            ],
            "crss": [{"name": "popular"}],
            "max_turns": 1,
            "llm": {"default": {"provider": "scripted", "replies": ["x"]}, "cache": {"mode": "off"}},
            "metrics": [{"name": "turns"}],
        }
    )
    experiment = build_experiment(config)
    experiment.llms.role("user").provider = ScriptedProvider(answer)
    asyncio.run(run_batch(experiment, tmp_path / "run"))
    dialogues = list(iter_dialogues(tmp_path / "run" / "dialogues.jsonl"))
    measured = asyncio.run(measure_dialogues(dialogues, RuleMeasurer(), Thresholds()))
    report = controllability(measured, method="rules", thresholds=Thresholds(), unit="utterance")
    (length,) = [r for r in report.results if r.pattern == "sentence_length"]
    assert length.test.direction == "intended"
    assert length.levels["short"].counts["short"] == length.levels["short"].n > 0
    assert length.levels["long"].counts["long"] == length.levels["long"].n > 0


async def test_user_ratings_does_not_apply_without_ratings_and_a_failing_notes_hook_is_the_users_error(
    domain: Domain,
) -> None:
    from crsim.eval.metrics.base import NotApplicable

    with pytest.raises(NotApplicable, match="no explicit user ratings"):
        await UserRatings().evaluate(Dialogue(id="x", utterances=[_user_utterance({})]))

    sim, _ = simulator(Answers(), domain, refinements=[], resolve_conflicts=False)

    def broken() -> Any:
        raise RuntimeError("notes lost")

    sim.dialogue_notes = broken  # type: ignore[method-assign]
    dialogue = await _dialogue(sim, fan(), max_turns=1)
    assert dialogue.termination is not None and dialogue.termination.error is not None
    assert dialogue.termination.error.source == "user" and "notes lost" in dialogue.termination.error.message
    assert dialogue.by(Role.USER)  # the utterances are kept


@pytest.mark.parametrize("concurrent", [True, False])
async def test_refinement_judges_look_at_the_draft_at_once_unless_switched_off(
    domain: Domain, concurrent: bool
) -> None:
    provider = Slow(Answers())  # both judges find the draft on the user's level: no refiner fires
    args = {
        "refinements": ["richness", "formality"],
        "concurrent_judges": concurrent,
        "resolve_conflicts": False,
    }
    sim = RecUserSim(
        simulator_registry.params("recusersim", args), BuildContext(domain, ScriptedHub(provider), 3)
    )  # type: ignore[arg-type]
    await sim.start(fan(), CRSReply("Hi!"))
    profile_of(sim, formality="neutral", information_richness="low")
    provider.peak = 0
    text, outcomes = await sim._refine("A thriller, please.")
    assert text == "A thriller, please." and [o.refined for o in outcomes] == [False, False]
    assert provider.peak == (2 if concurrent else 1)
