"""RecUserSim's action list and profile check speak the domain's words; for movies they read as before."""

from __future__ import annotations

from crsim.domains import domain_named
from crsim.language.domain_cues import prompt_nouns
from crsim.llm.prompts import load_template, render
from crsim.sim.recusersim.actions import INQUIRE
from crsim.sim.recusersim.simulator import PROMPTS

#: The texts the movie prompts hold (the inquiry's wording as changed for issue 23; the example as in
#: main fc21365, before the words came from the domain).
MOVIE_INQUIRE = (
    "ask about details of the recommended item that you still want to know "
    "(its plot, cast, director, year, ...)"
)
MOVIE_EXAMPLE = (
    "(for example disliking violence while loving war films, or a tight schedule with a wish for "
    "very long films)"
)


def _meaning(domain_name: str) -> str:
    return INQUIRE.meaning.replace("{details}", prompt_nouns(domain_named(domain_name))["details"])


def _resolve_system(domain_name: str) -> str:
    template = load_template(PROMPTS, "resolve.j2")
    words = prompt_nouns(domain_named(domain_name))
    return render(template, part="system", domain=domain_name, lines=[], wish="nothing specific",
                  contradiction=words["contradiction"])  # fmt: skip


def test_movie_prompts_read_as_before() -> None:
    assert _meaning("movies") == MOVIE_INQUIRE
    assert MOVIE_EXAMPLE in _resolve_system("movies")


def test_other_domains_name_their_own_details_and_no_films() -> None:
    meaning = _meaning("restaurants")
    assert meaning == (
        "ask about details of the recommended item that you still want to know "
        "(its food, area, pricerange, address, ...)"
    )
    system = _resolve_system("hotels")
    assert "disliking one kind of hotel" in system and "film" not in system
