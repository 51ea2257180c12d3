"""`requests_answered` and `task_success`: requests about a recommended item are scored against the
catalogue, and a CRS that answers nothing scores below one that answers."""

from __future__ import annotations

from pathlib import Path

import pytest
from rich.console import Console

import crsim
from crsim.core.components import BuildContext
from crsim.crs.base import CRSReply, CRSSession, crs_registry
from crsim.crs.retrieval import RetrievalCRS
from crsim.domains import domain_named
from crsim.eval.metrics.requests import RequestsAnswered, TaskSuccess
from crsim.eval.scores import default_metrics
from crsim.model.acts import DialogueAct, parse_acts
from crsim.model.dialogue import Dialogue, Role, Utterance
from crsim.model.domain import Domain
from crsim.model.user import InformationNeed
from crsim.report.tables import summary_table


@pytest.fixture(scope="module")
def restaurants() -> Domain:
    return domain_named("restaurants")


def act(text: str) -> list[DialogueAct]:
    return parse_acts(text) if text else []


def crs(text: str, acts: str = "", items: tuple[str, ...] = ()) -> Utterance:
    return Utterance(role=Role.CRS, text=text, acts=act(acts), recommended_items=list(items))


def user(text: str, acts: str) -> Utterance:
    return Utterance(role=Role.USER, text=text, acts=act(acts))


def dialogue(*utterances: Utterance) -> Dialogue:
    return Dialogue(
        id="d",
        utterances=list(utterances),
        information_need=InformationNeed(constraints={"food": "british"}, requests=["phone"]),
    )


RECOMMEND = crs(
    "How about Midsummer House Restaurant?", 'recommend(title="Midsummer House Restaurant")', ("508",)
)
ASK_PHONE = user("What's the phone number?", "inquire(phone)")
ACCEPT = user("Great, I'll go there. Bye!", 'accept(title="Midsummer House Restaurant")|goodbye()')


def scores(domain: Domain, d: Dialogue) -> tuple[float | None, float | None]:
    ctx = BuildContext(domain=domain)
    return RequestsAnswered(None, ctx).score(d), TaskSuccess(None, ctx).score(d)


def test_a_true_answer_counts_by_act_or_by_text(restaurants: Domain) -> None:
    by_act = dialogue(RECOMMEND, ASK_PHONE, crs("Here you go.", 'inform(phone="01223369299")'), ACCEPT)
    by_text = dialogue(RECOMMEND, ASK_PHONE, crs("You can call them on 01223369299."), ACCEPT)
    assert scores(restaurants, by_act) == (1.0, 1.0)
    assert scores(restaurants, by_text) == (1.0, 1.0)


def test_no_answer_or_a_wrong_one_does_not_count(restaurants: Domain) -> None:
    silent = dialogue(
        RECOMMEND, ASK_PHONE, crs("I don't have details about Midsummer House Restaurant."), ACCEPT
    )
    wrong = dialogue(
        RECOMMEND, ASK_PHONE, crs("Call (123) 456-7890.", 'inform(phone="(123) 456-7890")'), ACCEPT
    )
    assert scores(restaurants, silent) == (0.0, 0.0)
    assert scores(restaurants, wrong) == (0.0, 0.0)


def test_a_value_inside_the_title_answers_nothing() -> None:
    movies = domain_named("movies")
    item = movies.items["356"]  # Forrest Gump (1994)
    recommend = crs(f"How about {item.display_title}?", f'recommend(title="{item.display_title}")', ("356",))
    asked = user("When did it come out?", "inquire(year)")
    title_only = dialogue(recommend, asked, crs(f"I don't have details about {item.display_title}."))
    answered = dialogue(recommend, asked, crs(f"It came out in {item.year}."))
    assert RequestsAnswered(None, BuildContext(domain=movies)).score(title_only) == 0.0
    assert RequestsAnswered(None, BuildContext(domain=movies)).score(answered) == 1.0


def test_no_request_is_not_applicable_never_zero(restaurants: Domain) -> None:
    before_any_recommendation = dialogue(ASK_PHONE, crs("I need to know what you like first."))
    nothing_asked = dialogue(RECOMMEND, ACCEPT)
    assert scores(restaurants, before_any_recommendation) == (None, 0.0)
    assert scores(restaurants, nothing_asked) == (None, 1.0)


def test_task_success_needs_the_requests_about_the_accepted_item(restaurants: Domain) -> None:
    other = crs("Or De Luca Cucina And Bar?", 'recommend(title="De Luca Cucina And Bar")', ("3697",))
    # the unanswered request was about an earlier, rejected recommendation: the accepted one is fine
    d = dialogue(
        RECOMMEND,
        ASK_PHONE,
        crs("Sorry, I can't say."),
        user("No thanks.", 'reject(title="Midsummer House Restaurant")'),
        other,
        user("Its postcode?", "inquire(postcode)"),
        crs("The postcode is CB2 1AW.", 'inform(postcode="cb21aw")'),
        user("Good, bye.", 'accept(title="De Luca Cucina And Bar")|goodbye()'),
    )
    assert scores(restaurants, d) == (0.5, 1.0)


def test_both_metrics_are_in_the_default_set() -> None:
    names = [spec.name for spec in default_metrics()]
    assert "requests_answered" in names and "task_success" in names


class SilentCRS(RetrievalCRS):
    """`retrieval` that never answers a question about an item: its answers are replaced by a refusal,
    as the `popular` CRS words it."""

    async def respond(self, session: CRSSession, text: str) -> CRSReply:
        reply = await super().respond(session, text)
        if any(a.intent == "inform" for a in reply.acts) and not reply.recommended_items:
            return CRSReply(
                text="I don't have details about that one, sorry.",
                mentioned_items=reply.mentioned_items,
                items_listed=True,
            )
        return reply


def _means(result: crsim.Result, label: str) -> dict[str, float | None]:
    return {s.crs_id or "": s.metrics[label].mean for s in result.summaries}


@pytest.mark.parametrize("domain", ["movies", "restaurants"])
def test_a_crs_that_answers_nothing_scores_below_one_that_answers(domain: str, tmp_path: Path) -> None:
    crs_registry.add("silent", SilentCRS)
    config = {
        "domain": domain,
        "users": {"size": 30},
        "crss": [{"name": "retrieval"}, {"name": "silent"}],
    }
    result = crsim.run(config, out=tmp_path / "run", progress=False)
    answered = _means(result, "Requests answered")
    success = _means(result, "Task success")
    assert answered["silent"] == 0.0
    assert answered["retrieval"] is not None and answered["retrieval"] > 0.9
    assert success["silent"] is not None and success["retrieval"] is not None
    assert success["silent"] < success["retrieval"]
    # the results table keeps its wide layout in 80 columns: n= stands in for "(k missing)" there
    console = Console(width=80, record=True)
    console.print(summary_table(result.summaries))
    text = console.export_text()
    assert "Requests answered" in text and "CRS × simulator" not in text
    if any(s.metrics["Requests answered"].missing for s in result.summaries):
        assert " n=" in text


def test_the_wide_layout_writes_the_values_present_instead_of_the_missing() -> None:
    from crsim.eval.stats import aggregate
    from crsim.report.tables import format_aggregate

    some = aggregate([1.0, 0.0, 1.0, 1.0, None, None])
    assert format_aggregate(some).endswith(" (2 missing)")
    assert format_aggregate(some, compact=True).endswith("] n=4")
    assert format_aggregate(aggregate([1.0, None]), compact=True) == "1.000 (n=1, no CI)"
