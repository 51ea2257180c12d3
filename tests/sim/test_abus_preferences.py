"""The agenda data structure and the preference model of the agenda-based simulator."""

from __future__ import annotations

from crsim.domains.movielens import movie_domain
from crsim.model.acts import Intent
from crsim.model.user import InformationNeed, UserProfile
from crsim.sim.agenda.agenda import Agenda
from crsim.sim.agenda.preferences import Decision, PreferenceModel

MATRIX, LOVE_ACTUALLY, HEAT, TERMINATOR, NOTEBOOK = "2571", "6942", "6", "1240", "8533"
RATINGS = {"6365": 5.0, "6934": 5.0, TERMINATOR: 5.0, "589": 5.0, "1721": 1.5, NOTEBOOK: 1.0, "597": 1.5}


def model(need: InformationNeed | None = None, **profile: object) -> PreferenceModel:
    profile.setdefault("item_ratings", RATINGS)
    return PreferenceModel(UserProfile.model_validate(profile), need or InformationNeed(), movie_domain())


def test_agenda_from_need() -> None:
    need = InformationNeed(constraints={"genre": "comedy", "actor": ["A", "B"]}, requests=["plot", "year"])
    agenda = Agenda.from_need(need)
    assert agenda.as_strings() == [
        'disclose(genre="comedy")',
        'disclose(actor="A",actor="B")',
        "inquire(plot)",
        "inquire(year)",
        "goodbye()",
    ]


def test_agenda_cleaning_keeps_requests() -> None:
    agenda = Agenda.from_need(InformationNeed(constraints={"genre": "comedy"}, requests=["plot"]))
    dropped = agenda.clean(["genre", "plot"])
    assert [str(a) for a in dropped] == ['disclose(genre="comedy")']
    assert agenda.as_strings() == ["inquire(plot)", "goodbye()"]
    assert agenda.remove_inquiry("plot") and not agenda.remove_inquiry("plot")
    assert agenda.pop_intent(Intent.GOODBYE) is not None and len(agenda) == 0


def test_prediction_follows_rated_content() -> None:
    prefs = model()
    items = movie_domain().items
    liked, disliked = prefs.predict(items[MATRIX]), prefs.predict(items[LOVE_ACTUALLY])
    assert liked > prefs.mean > disliked
    assert disliked >= 0.5 and liked <= 5.0


def test_stated_likes_and_dislikes_move_the_prediction() -> None:
    items = movie_domain().items
    base = model().predict(items[HEAT])
    fan = model(preferences={"director": {"likes": ["Michael Mann"]}}).predict(items[HEAT])
    hater = model(preferences={"actor": {"dislikes": ["Al Pacino"]}}).predict(items[HEAT])
    assert hater < base < fan


def test_user_without_ratings_predicts_the_default() -> None:
    assert model(item_ratings={}).predict(movie_domain().items[HEAT]) == 3.5


def test_judgements() -> None:
    prefs = model(InformationNeed(constraints={"genre": "sci-fi"}, targets=[LOVE_ACTUALLY]))
    assert prefs.judge(LOVE_ACTUALLY).decision == Decision.ACCEPT  # target, whatever it predicts
    assert prefs.judge(MATRIX).decision == Decision.ACCEPT
    seen = prefs.judge(NOTEBOOK)
    assert seen.decision == Decision.SEEN and seen.liked is False and seen.rating == 1.0
    assert prefs.judge(TERMINATOR).liked is True
    wrong_genre = prefs.judge(HEAT)
    assert wrong_genre.decision == Decision.REJECT and wrong_genre.violated == "genre"
    assert prefs.judge("no-such-item").decision == Decision.REJECT


def test_threshold_decides() -> None:
    strict = PreferenceModel(
        UserProfile(item_ratings=RATINGS), InformationNeed(), movie_domain(), accept_threshold=5.0
    )
    lenient = PreferenceModel(
        UserProfile(item_ratings=RATINGS), InformationNeed(), movie_domain(), accept_threshold=1.0
    )
    assert strict.judge(LOVE_ACTUALLY).decision == Decision.REJECT
    assert lenient.judge(LOVE_ACTUALLY).decision == Decision.ACCEPT


def test_favourite_value_from_ratings() -> None:
    prefs = model()
    assert prefs.favourite("genre") in {"sci-fi", "action"}
    assert prefs.favourite("director") in {"Lana Wachowski", "Lilly Wachowski", "James Cameron"}
    assert prefs.favourite("keyword") is None
    assert model(item_ratings={}).favourite("genre") is None


def test_favourite_fits_the_constraints() -> None:
    """Among liked romances, Nora Ephron is the director to name, even though sci-fi rates higher."""
    ratings = {**RATINGS, "539": 4.0, "2424": 4.0}  # Sleepless in Seattle, You've Got Mail
    assert model(item_ratings=ratings).favourite("director") in {"Lana Wachowski", "James Cameron"}
    romance = model(InformationNeed(constraints={"genre": "romance"}), item_ratings=ratings)
    assert romance.favourite("director") == "Nora Ephron"
    assert romance.favourite("actor") in {"Tom Hanks", "Meg Ryan"}
