"""The degraded twins (`crsim.crs.degraded`): each removes the one property it names, and only that."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from crsim.core.components import BuildContext, build
from crsim.core.plugins import ComponentSpec
from crsim.crs.base import BaseCRS, CRSReply, CRSSession, crs, crs_registry
from crsim.crs.degraded import NON_ANSWER, DegradedCRS
from crsim.crs.item_index import item_index
from crsim.model.domain import Domain

#: What the scripted CRS says: a question, a listed recommendation, an answer about it, a text-only
#: recommendation (titles only, as an HTTP CRS may send), another listed recommendation.
SCRIPT = [
    CRSReply("How about Toy Story (1995)?", recommended_items=["1"], items_listed=True),
    CRSReply("It was directed by John Lasseter.", mentioned_items=["1"], items_listed=True),
    CRSReply("You might like Jumanji (1995)."),
    CRSReply("Then try Grumpier Old Men (1995).", recommended_items=["3"], items_listed=True),
]
USER = ["I like comedies.", "Who directed it?", "Something else please.", "No, another one."]


@pytest.fixture
def scripted() -> Iterator[str]:
    @crs("degraded_test_scripted")
    class Scripted(BaseCRS):
        """Greets with a question, then says the next line of SCRIPT whatever the user wrote."""

        def __init__(self, params: Any, ctx: BuildContext) -> None:
            self.closed: list[str] = []

        async def start(self, session: CRSSession) -> CRSReply | None:
            session.state = 0
            return CRSReply("Hi! What kind of movie are you looking for?")

        async def respond(self, session: CRSSession, text: str) -> CRSReply:
            reply = SCRIPT[min(session.state, len(SCRIPT) - 1)]
            session.state += 1
            return CRSReply(
                reply.text,
                list(reply.recommended_items),
                mentioned_items=list(reply.mentioned_items),
                items_listed=reply.items_listed,
            )

        async def close(self, session: CRSSession) -> None:
            self.closed.append(session.id)

    yield "degraded_test_scripted"


def _twin(domain: Domain, kind: str, of: str) -> DegradedCRS:
    spec = ComponentSpec(name="degraded", args={"of": {"name": of}, "kind": kind})
    built = build(crs_registry, spec, BuildContext(domain=domain), "crss[0]")
    assert isinstance(built, DegradedCRS)
    return built


def _talk(twin: Any, seed: int = 7, user: list[str] = USER) -> list[CRSReply]:
    async def go() -> list[CRSReply]:
        session = CRSSession(id=f"s{seed}", seed=seed)
        first = await twin.start(session)
        replies = [first] if first is not None else []
        for text in user:
            replies.append(await twin.respond(session, text))
        await twin.close(session)
        return replies

    return asyncio.run(go())


def test_random_recommends_unshown_catalogue_items_seeded_per_dialogue(domain: Domain, scripted: str) -> None:
    twin = _twin(domain, "random", scripted)
    replies = _talk(twin)
    recommended = [r.recommended_items for r in replies if r.recommended_items]
    assert len(recommended) == 3 and all(len(ids) == 1 for ids in recommended)
    flat = [ids[0] for ids in recommended]
    assert len(set(flat)) == 3 and not set(flat) & {"1", "2", "3"}
    assert all(
        domain.items[i].display_title in r.text
        for r, i in zip([replies[1], replies[3], replies[4]], flat, strict=True)
    )
    assert [r.recommended_items for r in _talk(twin)] == [r.recommended_items for r in replies]  # same seed
    assert [r.recommended_items for r in _talk(twin, seed=8)] != [r.recommended_items for r in replies]


def test_stale_repeats_the_first_recommendation(domain: Domain, scripted: str) -> None:
    replies = _talk(_twin(domain, "stale", scripted))
    assert [r.recommended_items for r in replies[1:] if r.recommended_items] == [["1"], ["1"], ["1"]]
    assert "Toy Story (1995)" in replies[3].text and "Jumanji" not in replies[3].text
    assert "Toy Story (1995)" in replies[4].text and "Grumpier" not in replies[4].text


def test_deaf_recommends_in_popularity_order_whatever_the_user_says(domain: Domain, scripted: str) -> None:
    twin = _twin(domain, "deaf", scripted)
    index = item_index(domain)
    by_popularity = sorted(index.ids, key=lambda i: -float(index.popularity[index.position[i]]))
    replies = _talk(twin)
    flat = [r.recommended_items[0] for r in replies if r.recommended_items]
    assert flat == by_popularity[:3]
    other = _talk(twin, seed=99, user=["I hate everything.", "Tell me more.", "Anything.", "Bye."])
    assert [r.recommended_items for r in other] == [r.recommended_items for r in replies]


def test_eager_recommends_instead_of_asking(domain: Domain, scripted: str) -> None:
    replies = _talk(_twin(domain, "eager", scripted))
    assert replies[0].recommended_items, "the greeting asked instead of recommending"
    assert domain.items[replies[0].recommended_items[0]].display_title in replies[0].text
    assert replies[2].text == "It was directed by John Lasseter."  # an answer is not a question: kept


def test_mute_answers_no_question_about_an_item(domain: Domain, scripted: str) -> None:
    replies = _talk(_twin(domain, "mute", scripted))
    original = _talk(crs_registry.get(scripted)(None, BuildContext(domain=domain)))
    assert replies[2].text == NON_ANSWER and replies[2].mentioned_items == []
    for k in (0, 1, 3, 4):  # replies to messages that ask nothing are the wrapped CRS's
        assert replies[k].text == original[k].text
        assert replies[k].recommended_items == (original[k].recommended_items or replies[k].recommended_items)


def test_garbled_shuffles_the_words_and_keeps_the_items(domain: Domain, scripted: str) -> None:
    replies = _talk(_twin(domain, "garbled", scripted))
    original = _talk(crs_registry.get(scripted)(None, BuildContext(domain=domain)))
    for mine, theirs in zip(replies, original, strict=True):
        assert sorted(mine.text.split()) == sorted(theirs.text.split())
        assert mine.text != theirs.text
    assert replies[1].recommended_items == ["1"] and replies[4].recommended_items == ["3"]
    assert replies[3].recommended_items == ["2"] and replies[3].items_listed  # linked before shuffling


def test_the_wrapped_crs_is_closed_and_its_model_roles_are_the_twins(domain: Domain, scripted: str) -> None:
    twin = _twin(domain, "stale", scripted)
    _talk(twin)
    assert twin.inner.closed == ["s7"]  # type: ignore[attr-defined]
    params = crs_registry.params("degraded", {"of": {"name": "llm"}, "kind": "random"}, where="crss[0]")
    assert DegradedCRS.llm_roles(params) == ["crs"]
    with pytest.raises(Exception, match="kind"):
        crs_registry.params("degraded", {"of": {"name": "popular"}, "kind": "sleepy"}, where="crss[0]")


async def test_a_crs_over_http_degrades_as_the_same_crs_in_process(tmp_path: Any) -> None:
    """The twin wraps whatever follows the CRS protocol: `retrieval` served on 127.0.0.1 and reached
    with `generic_http` gives, degraded, the records the in-process `retrieval` gives degraded."""
    from crsim.crs.server import create_app
    from crsim.runner.batch import run_batch
    from crsim.runner.build import build_domain, build_experiment
    from crsim.runner.config import ExperimentConfig
    from faults.servers import running_server
    from support import records_without_timing

    base = {"users": {"size": 5}, "max_turns": 10, "concurrency": 2}

    def twins(of: dict[str, Any]) -> list[dict[str, Any]]:
        return [
            {"name": "degraded", "id": f"retrieval~{kind}", "args": {"of": of, "kind": kind}}
            for kind in ("random", "stale", "garbled")
        ]

    local = ExperimentConfig.model_validate({**base, "crss": twins({"name": "retrieval"})})
    await run_batch(build_experiment(local), tmp_path / "local")
    served = crs_registry.get("retrieval")(
        crs_registry.params("retrieval", {}), BuildContext(build_domain(local))
    )
    with running_server(create_app(served)) as url:
        remote_spec = {
            "name": "generic_http",
            "id": "retrieval",
            "args": {"base_url": url, "link_titles": False},
        }
        remote = ExperimentConfig.model_validate({**base, "crss": twins(remote_spec)})
        await run_batch(build_experiment(remote), tmp_path / "remote")
    local_records = records_without_timing(tmp_path / "local" / "dialogues.jsonl")
    assert len(local_records) == 15
    assert local_records == records_without_timing(tmp_path / "remote" / "dialogues.jsonl")


def test_the_wrapped_crs_is_checked_where_the_config_names_it() -> None:
    from crsim.core.errors import ConfigError

    for of, expected in [
        ({"name": "retreival"}, "unknown crs 'retreival' (did you mean 'retrieval'?)"),
        ({"name": "retrieval", "args": {"bogus": 1}}, "of.args.bogus: unknown argument for crs 'retrieval'"),
        ({"name": "degraded", "args": {"of": {"name": "popular"}, "kind": "stale"}}, "not another twin"),
    ]:
        with pytest.raises(ConfigError) as caught:
            crs_registry.params("degraded", {"of": of, "kind": "stale"}, where="crss[1]")
        assert "crss[1].args.of" in str(caught.value) and expected in str(caught.value)
