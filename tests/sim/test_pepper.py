"""PEPPER: the reviews table, the PEPPER users, the `pepper` and `target_biased` simulators (scripted
model), the selected/residual metrics and curves, the preference-accuracy study, and one short run
on the real local model."""

from __future__ import annotations

import asyncio
import json
import re
from pathlib import Path
from typing import Any

import pytest
from typer.testing import CliRunner

from crsim.cli import app
from crsim.core.components import BuildContext
from crsim.core.errors import DataError
from crsim.core.plugins import ComponentSpec
from crsim.crs.base import BaseCRS, CRSReply, CRSSession
from crsim.domains.movielens import movie_domain
from crsim.eval.scores import build_metrics
from crsim.llm.providers.scripted import ScriptedProvider
from crsim.llm.types import Message, ResolvedGeneration
from crsim.model.dialogue import Dialogue, Role, TerminationReason
from crsim.model.io import iter_dialogues
from crsim.model.user import SimulatedUser
from crsim.runner.loop import run_dialogue
from crsim.sim.base import simulator_registry
from crsim.sim.pepper.simulator import item_interface
from crsim.studies.pepper.accuracy import AccuracyOptions, preference_accuracy, read_choice
from crsim.studies.pepper.curves import pepper_curves, plot_curves, split_table
from crsim.users.pepper import pepper_source, split_by_rating
from crsim.users.population import PopulationConfig
from crsim.users.reviews import read_reviews
from crsim.users.sources import build_users
from support import ScriptedHub

runner = CliRunner()
DOMAIN = movie_domain()
#: Ten movies of the shipped domain: Toy Story, Jumanji, Grumpier Old Men, Heat, ...
MOVIES = [i.id for i in list(DOMAIN.items)[:12]]


def answers(reflection: str = '{"like": "the jokes", "dislike": "the ending"}') -> ScriptedProvider:
    """JSON requests get a reflection (or review likes), choices "A", other requests a message."""

    def script(messages: list[Message], generation: ResolvedGeneration) -> str:
        if generation.grammar is not None:
            return "A"
        if generation.json_schema is not None:
            if "like" in generation.json_schema["properties"]:
                return reflection
            return '{"likes": ["clever plot"], "dislikes": ["slow start"]}'
        if "Begin with" in messages[-1]["content"]:
            return "You enjoy warm family comedies and dislike gore."
        return "Something light and funny would be great."

    return ScriptedProvider(script)


class ListCRS(BaseCRS):
    """Recommends the given lists, one per reply (the last one again when they run out)."""

    def __init__(self, lists: list[list[str]]) -> None:
        self.lists = lists

    async def respond(self, session: CRSSession, text: str) -> CRSReply:
        index = session.state = (session.state or 0) + 1
        items = self.lists[min(index, len(self.lists)) - 1]
        titles = ", ".join(DOMAIN.items[i].display_title for i in items)
        return CRSReply(text=f"Try {titles}." if items else "What do you like?", recommended_items=items)


def pepper_user(seen: dict[str, float], targets: list[str], **persona: Any) -> SimulatedUser:
    return SimulatedUser.model_validate(
        {
            "id": "u1",
            "profile": {"item_ratings": seen, "persona": {"rating_scale": [0.5, 5.0], **persona}},
            "need": {"targets": targets},
        }
    )


def simulate(
    name: str, user: SimulatedUser, crs: BaseCRS, provider: ScriptedProvider, turns: int = 3, **args: Any
) -> Dialogue:
    params = simulator_registry.params(name, args)
    sim = simulator_registry.get(name)(params, BuildContext(DOMAIN, ScriptedHub(provider), 7))
    return asyncio.run(
        run_dialogue(sim, crs, user, dialogue_id="d1", session=CRSSession("d1", 1), max_turns=turns)
    )


def prompts(provider: ScriptedProvider) -> list[str]:
    return ["\n".join(m["content"] for m in messages) for messages, _ in provider.requests]


# --- reviews table and users -------------------------------------------------------------------


def write_reviews(path: Path, rows: int = 10) -> None:
    lines = ["user_id,item_id,rating,review"]
    for n, item in enumerate(MOVIES[:rows], start=1):
        lines.append(f'alice,{item},{n},"Review {n}: it was {"great" if n > 5 else "dull"}, really."')
    lines.append("bob,1,7,")
    path.write_text("\n".join(lines) + "\n", encoding="utf-8")


def test_reviews_table_csv_and_jsonl(tmp_path: Path) -> None:
    write_reviews(tmp_path / "r.csv")
    rows = read_reviews(tmp_path / "r.csv")
    assert len(rows) == 11 and rows[0].rating == 1.0 and rows[0].text.startswith("Review 1")
    assert rows[-1].user_id == "bob" and rows[-1].text == ""
    (tmp_path / "r.jsonl").write_text(
        json.dumps({"user_id": 5, "item_id": "1", "rating": 4.5, "review": "Fun"}) + "\n\n", encoding="utf-8"
    )
    assert read_reviews(tmp_path / "r.jsonl")[0].user_id == "5"


@pytest.mark.parametrize(
    ("content", "name", "where"),
    [
        ("user_id,item_id,review\nu,1,x\n", "a.csv", r"record 1: the header lacks column\(s\) rating"),
        (
            "user_id,item_id,rating\nu,1,4\nu,2,good\n",
            "a.csv",
            r"record 3, field 'rating': expected a number, got 'good'",
        ),
        ("user_id,item_id,rating\n,1,4\n", "a.csv", r"record 2, field 'user_id': expected a non-empty id"),
        ("user_id,item_id,rating\nu,1,4\nu,1,5\n", "a.csv", r"record 3: user 'u' reviews item '1' twice"),
        (
            '{"user_id": "u", "item_id": "1", "rating": 4}\n{"user_id": "u"\n',
            "a.jsonl",
            r"record 2: not JSON",
        ),
        (
            '{"user_id": "u", "item_id": "1", "rating": 4, "review": 3}\n',
            "a.jsonl",
            r"record 1, field 'review'",
        ),
        ("user_id,item_id,rating\n", "a.csv", r"no rows"),
    ],
)
def test_reviews_table_bad_input_names_file_record_and_field(
    tmp_path: Path, content: str, name: str, where: str
) -> None:
    path = tmp_path / name
    path.write_text(content, encoding="utf-8")
    with pytest.raises(DataError, match=re.escape(str(path)) + r".*" + where):
        read_reviews(path)


def test_reviews_users_split_by_rating(tmp_path: Path) -> None:
    write_reviews(tmp_path / "r.csv")
    config = PopulationConfig(source="reviews", file=tmp_path / "r.csv", size=1, selected_targets=1)
    (user,) = build_users(config, DOMAIN, seed=3)
    assert user.id == "rv-alice"  # bob has one review: not eligible
    assert set(user.need.targets) == set(MOVIES[8:10])  # the top 20% of ten ratings (9 and 10)
    assert set(user.profile.item_ratings) == set(MOVIES[:8])
    assert set(user.profile.persona["reviews"]) <= set(MOVIES[:8])  # no review of a target in the profile
    split = user.profile.persona["target_split"]
    assert len(split["selected"]) == 1 and sorted(split["selected"] + split["residual"]) == sorted(
        user.need.targets
    )
    assert user.profile.persona["rating_scale"] == [1.0, 10.0]
    assert pepper_source(config, DOMAIN).ratings["alice"][MOVIES[9]] == 10.0


def test_movielens_pepper_users_hold_out_the_top_fifth() -> None:
    config = PopulationConfig(source="pepper", size=3)
    users = build_users(config, DOMAIN, seed=42)
    assert users == build_users(config, DOMAIN, seed=42)
    for user in users:
        rated = len(user.need.targets) + len(user.profile.item_ratings)
        assert len(user.need.targets) == -(-rated // 5)  # ceil(20%)
        assert not set(user.need.targets) & set(user.profile.item_ratings)
        assert len(user.profile.persona["target_split"]["selected"]) == 3


def test_split_by_rating_keeps_one_seen_item() -> None:
    import random

    targets, seen = split_by_rating({"a": 5, "b": 4}, 1.0, random.Random(0))
    assert targets == ["a"] and seen == {"b": 4}


# --- the pepper simulator ----------------------------------------------------------------------


def test_item_interface_classifies_seen_and_unseen() -> None:
    user = pepper_user({MOVIES[0]: 4.0}, [MOVIES[1]])
    shown = item_interface(user, DOMAIN, [MOVIES[0], MOVIES[1], MOVIES[0], "no-such-id", MOVIES[2]], 3, 80)
    assert [s.item.id for s in shown] == [MOVIES[0], MOVIES[1], MOVIES[2]]
    assert shown[0].feedback is not None and shown[0].feedback.rating == 4.0
    assert shown[1].feedback is None and shown[2].feedback is None  # a target looks like any unseen item
    assert item_interface(user, DOMAIN, MOVIES, 0, 80) == []


def test_targets_never_appear_as_targets_in_any_prompt() -> None:
    seen = {MOVIES[0]: 4.5, MOVIES[2]: 1.0, MOVIES[3]: 4.0}
    target, other_unseen = MOVIES[1], MOVIES[4]
    user = pepper_user(
        seen, [target, MOVIES[5]], target_split={"selected": [target], "residual": [MOVIES[5]]}
    )
    provider = answers()
    crs = ListCRS([[target, MOVIES[0], other_unseen], [other_unseen, target]])
    dialogue = simulate("pepper", user, crs, provider, turns=3, items_shown=3)
    assert dialogue.termination is not None and dialogue.termination.reason == TerminationReason.MAX_TURNS
    texts = prompts(provider)
    target_title = DOMAIN.items[target].display_title
    hidden_title = DOMAIN.items[MOVIES[5]].display_title
    for text in texts:
        assert "target" not in text.lower() and hidden_title not in text
        for line in text.splitlines():  # where a target is shown, it is shown exactly like an unseen item
            if target_title in line and "watched" in line:
                raise AssertionError(f"a target is presented as seen: {line}")
    # the narrative and the opening come before anything was shown: no target title in them
    assert all(target_title not in t for t in texts[:2])
    shown_turns = [u for u in dialogue.by(Role.USER) if u.shown_items]
    assert shown_turns[0].shown_items == [target, MOVIES[0], other_unseen]
    interface = shown_turns[0].annotations["item_interface"]
    assert interface == [
        {"item": target, "seen": False},
        {"item": MOVIES[0], "seen": True},
        {"item": other_unseen, "seen": False},
    ]
    seen_line = next(line for line in texts[-1].splitlines() if DOMAIN.items[MOVIES[0]].display_title in line)
    assert "4.5 out of 5" in seen_line or any("4.5 out of 5" in t for t in texts)
    assert dialogue.user_profile is not None
    assert dialogue.user_profile.persona["general_preferences"].startswith("You enjoy")


def test_reflected_preferences_feed_the_next_reply_once_per_item() -> None:
    user = pepper_user({MOVIES[0]: 4.5}, [MOVIES[1]])
    provider = answers()
    crs = ListCRS([[MOVIES[0], MOVIES[2]], [MOVIES[0], MOVIES[2]]])
    dialogue = simulate("pepper", user, crs, provider, turns=3, items_shown=2)
    reflect_requests = [m for m, g in provider.requests if g.json_schema is not None]
    assert len(reflect_requests) == 2  # two distinct items, each reflected on once
    seen_prompt = "\n".join(m["content"] for m in reflect_requests[0])
    assert "You have watched it and rated it 4.5 out of 5" in seen_prompt
    assert "You have not watched it" in "\n".join(m["content"] for m in reflect_requests[1])
    reply_prompt = provider.requests[-1][0][-1]["content"]
    assert "you like the jokes; you dislike the ending" in reply_prompt
    second = dialogue.by(Role.USER)[1]
    assert second.annotations["reflected_preferences"][0] == {
        "item": MOVIES[0],
        "seen": True,
        "like": "the jokes",
        "dislike": "the ending",
    }


def test_no_item_interface_means_no_reflection() -> None:
    user = pepper_user({MOVIES[0]: 4.5}, [MOVIES[1]])
    provider = answers()
    dialogue = simulate("pepper", user, ListCRS([[MOVIES[0], MOVIES[2]]]), provider, turns=2, items_shown=0)
    assert all(g.json_schema is None for _, g in provider.requests)
    assert all(not u.shown_items and "item_interface" not in u.annotations for u in dialogue.by(Role.USER))
    assert "On your screen" not in provider.requests[-1][0][-1]["content"]


def test_an_unreadable_reflection_is_kept_as_an_error_and_left_out() -> None:
    user = pepper_user({MOVIES[0]: 4.5}, [MOVIES[1]])
    provider = answers(reflection="I like it a lot")
    dialogue = simulate("pepper", user, ListCRS([[MOVIES[2]]]), provider, turns=2, items_shown=1)
    record = dialogue.by(Role.USER)[1].annotations["reflected_preferences"][0]
    assert (
        record["item"] == MOVIES[2] and record["raw"] == "I like it a lot" and "unreadable" in record["error"]
    )
    assert "What you think of them" not in provider.requests[-1][0][-1]["content"]


def test_review_users_get_binary_preferences_from_their_reviews() -> None:
    user = pepper_user({MOVIES[0]: 4.5, MOVIES[2]: 1.0}, [MOVIES[1]], reviews={MOVIES[0]: "Loved the toys."})
    provider = answers()
    dialogue = simulate("pepper", user, ListCRS([[]]), provider, turns=1)
    extract = "\n".join(m["content"] for m in provider.requests[0][0])
    assert "Loved the toys." in extract
    narrative = "\n".join(m["content"] for m in provider.requests[1][0])
    assert "clever plot" in narrative and "slow start" in narrative
    assert dialogue.user_profile is not None
    assert dialogue.user_profile.persona["binary_preferences"]["likes"][0].startswith("clever plot")


# --- target-biased simulator, selected and residual ----------------------------------------------


def test_target_biased_user_is_told_selected_attributes_without_titles() -> None:
    selected, residual = MOVIES[1], MOVIES[5]
    user = pepper_user(
        {MOVIES[0]: 4.0}, [selected, residual], target_split={"selected": [selected], "residual": [residual]}
    )
    provider = answers()
    dialogue = simulate("target_biased", user, ListCRS([[residual, selected]]), provider, turns=2)
    assert dialogue.metadata["target_split"] == {"selected": [selected], "residual": [residual]}
    chat = [m for m, _ in provider.requests if m[0]["content"].startswith("You are a person chatting")]
    system_text = chat[0][0]["content"]
    item = DOMAIN.items[selected]
    assert item.directors[0] in system_text and (item.plot or "")[:30] in system_text
    for title in (item.display_title, DOMAIN.items[residual].display_title):
        assert title not in system_text
    assert (DOMAIN.items[residual].plot or "")[:30] not in system_text
    assert dialogue.user_profile is not None and "general_preferences" in dialogue.user_profile.persona


def dialogue_with(
    lists: list[list[str]], targets: list[str], split: dict[str, list[str]], crs: str = "c"
) -> Dialogue:
    utterances: list[dict[str, Any]] = []
    for items in lists:
        utterances += [
            {"role": "user", "text": "hi"},
            {"role": "crs", "text": "x", "recommended_items": items},
        ]
    return Dialogue.model_validate(
        {
            "id": f"{crs}-{len(lists)}",
            "crs_id": crs,
            "simulator_id": "s",
            "utterances": utterances,
            "information_need": {"targets": targets},
            "user_profile": {"persona": {"target_split": split}},
        }
    )


def test_selected_residual_coverage_gap_and_curves(tmp_path: Path) -> None:
    split = {"selected": ["a", "b"], "residual": ["c", "d"]}
    dialogue = dialogue_with([["a", "x"], ["b", "c"]], ["a", "b", "c", "d"], split)
    metrics = build_metrics(
        [
            ComponentSpec(name="pc_subset", args={"subset": "selected", "k": 5}),
            ComponentSpec(name="pc_subset", args={"subset": "residual", "k": 5}),
            ComponentSpec(name="pc_gap", args={"k": 5}),
            ComponentSpec(name="pc_subset", args={"subset": "residual", "k": 5, "turn": 1}),
        ]
    )
    assert [m.label for m in metrics] == ["PC_sel@5", "PC_res@5", "PC_gap@5", "PC_1_res@5"]
    assert [m.score(dialogue) for m in metrics] == [1.0, 0.5, -0.5, 0.0]  # type: ignore[union-attr]
    recorded = dialogue.model_copy(
        update={"metadata": {"target_split": {"selected": ["c"], "residual": ["a"]}}}
    )
    assert metrics[0].score(recorded) == 1.0  # type: ignore[union-attr]  # the simulator's own split wins
    bare = dialogue.model_copy(update={"user_profile": None})
    assert metrics[2].score(bare) is None  # type: ignore[union-attr]
    other = dialogue_with([["x"]], ["a", "b", "c", "d"], split, crs="d")
    rows = split_table([dialogue, other], k=5)
    assert [(r.crs_id, r.n, r.selected, r.residual, r.gap) for r in rows] == [
        ("c", 1, 1.0, 0.5, -0.5),
        ("d", 1, 0.0, 0.0, 0.0),
    ]
    curves = pepper_curves([dialogue, other], ks=(5,), max_turns=3)
    pc = next(c for c in curves if c.crs_id == "c" and c.curve.metric == "PC@5")
    assert pc.curve.mean == [0.25, 0.75, 0.75]
    png = plot_curves(curves, "PC@5", tmp_path / "pc.png")
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


def test_curves_command_writes_json_and_plots(tmp_path: Path) -> None:
    split = {"selected": ["a"], "residual": ["b"]}
    lines = [dialogue_with([["a"], ["b"]], ["a", "b"], split).model_dump_json()]
    (tmp_path / "dialogues.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    result = runner.invoke(app, ["pepper", "curves", str(tmp_path), "--k", "5"])
    assert result.exit_code == 0, result.output
    assert "PC_sel" in result.output and (tmp_path / "pc_curve_at5.png").is_file()
    data = json.loads((tmp_path / "pepper_curves.json").read_text(encoding="utf-8"))
    assert data["split"][0]["pc_selected"] == 1.0 and data["split"][0]["gap"] == 0.0
    missing = runner.invoke(app, ["pepper", "curves", str(tmp_path / "nope")])
    assert missing.exit_code == 2 and "dialogues.jsonl" in missing.output


# --- preference representation accuracy ---------------------------------------------------------


def test_preference_accuracy_scores_each_representation() -> None:
    user = pepper_user({MOVIES[0]: 4.5, MOVIES[2]: 1.0}, [MOVIES[1], MOVIES[3], MOVIES[4]])
    true = {"u1": {MOVIES[1]: 5.0, MOVIES[3]: 4.0, MOVIES[4]: 4.0}}
    provider = answers()
    report = asyncio.run(
        preference_accuracy(ScriptedHub(provider).role("user"), [user], true, DOMAIN, AccuracyOptions())
    )
    assert [s.representation for s in report.scores] == ["general", "raw", "binary"]
    for s in report.scores:
        assert s.pairs == 2 and s.answered == 2 and s.picked_first == 1.0  # two pairs differ in rating
        assert (
            s.accuracy
            == sum(c.correct is True for c in report.choices if c.representation == s.representation) / 2
        )
    raw_prompt = next(
        m for m, g in provider.requests if g.grammar and "rated 4.5 out of 5" in m[0]["content"]
    )
    assert "You enjoy" not in raw_prompt[0]["content"]
    assert read_choice("Answer: B") == "B" and read_choice("Both") is None
    options = AccuracyOptions(representations=("general",), both_orders=True)
    both = asyncio.run(
        preference_accuracy(ScriptedHub(answers()).role("user"), [user], true, DOMAIN, options)
    )
    assert both.scores[0].pairs == 2 and both.scores[0].answered == 0  # "A" both times: no consistent pick
    assert both.choices[0].error == "the choice changes with the order"


# --- the real local model ------------------------------------------------------------------------


@pytest.mark.slow
def test_three_pepper_dialogues_on_the_local_model(tmp_path: Path) -> None:
    """One user against three CRSs: the general preferences are written once and shared (in flight
    or from the cache), then each dialogue shows, reflects on and answers its own recommendations."""
    from crsim.runner.batch import run_batch
    from crsim.runner.build import build_experiment
    from crsim.runner.config import ExperimentConfig

    pepper_args = {
        "items_shown": 1,
        "max_tokens": 16,
        "reflect_max_tokens": 64,
        "narrative_max_tokens": 24,
        "narrative_items": 3,
        "plot_chars": 60,
    }
    config = ExperimentConfig.model_validate(
        {
            "users": {"source": "pepper", "size": 1},
            "simulators": [{"name": "pepper", "args": pepper_args}],
            "crss": [
                {"name": "popular", "args": {"max_questions": 0}},
                {"name": "retrieval", "args": {"max_questions": 0}},
                {"name": "popular", "args": {"max_questions": 0, "k": 3}, "id": "popular-3"},
            ],
            "metrics": [{"name": "pc", "args": {"k": 10}}],
            "max_turns": 2,
            "concurrency": 3,
            "llm": {
                "default": {"provider": "local", "context_size": 1024, "max_concurrency": 2, "temperature": 0}
            },
            "out": str(tmp_path),
        }
    )
    experiment = build_experiment(config)
    asyncio.run(run_batch(experiment, tmp_path))
    records = list(iter_dialogues(tmp_path / "dialogues.jsonl"))
    assert len(records) == 3
    narratives = set()
    for dialogue in records:
        assert dialogue.termination is not None, dialogue.id
        assert dialogue.termination.fault is None, dialogue.termination
        users = dialogue.by(Role.USER)
        assert len(users) == 2 and all(u.text.strip() for u in users)
        assert dialogue.user_profile is not None
        narratives.add(dialogue.user_profile.persona["general_preferences"])
        assert (
            users[1].shown_items
            and users[1].annotations["item_interface"][0]["item"] == users[1].shown_items[0]
        )
        assert all(call.role == "user" and call.completion_tokens > 0 for u in users for call in u.llm_calls)
    assert len(narratives) == 1 and next(iter(narratives))
    assert experiment.llms.role("user").calls < sum(r.llm_usage["user"].calls for r in records)


def test_pref_accuracy_command(tmp_path: Path) -> None:
    config = tmp_path / "c.yaml"
    config.write_text(
        "users: {source: pepper, size: 1}\n"
        "simulators: [{name: pepper, args: {narrative_items: 4}}]\n"
        "llm: {default: {provider: scripted, replies: ['A']}, cache: {mode: 'off'}}\n",
        encoding="utf-8",
    )
    result = runner.invoke(
        app, ["pepper", "pref-accuracy", str(config), "--pairs", "2", "--out", str(tmp_path / "a.json")]
    )
    assert result.exit_code == 0, result.output
    report = json.loads((tmp_path / "a.json").read_text(encoding="utf-8"))
    assert [s["pairs"] for s in report["scores"]] == [2, 2, 2] and report["scores"][0]["picked_first"] == 1.0
    config.write_text("users: {size: 1}\n", encoding="utf-8")
    wrong = runner.invoke(app, ["pepper", "pref-accuracy", str(config)])
    assert wrong.exit_code == 2 and "PEPPER source" in wrong.output
