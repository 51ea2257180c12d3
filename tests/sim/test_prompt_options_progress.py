"""`llm_single` and `llm_dual` with buttons and a CRS that makes no progress: the prompts list the
buttons, a message repeating a label picks it, and replies without progress end the dialogue through
the stop decision (scripted provider: the script sees every request)."""

from __future__ import annotations

from crsim.crs.base import BaseCRS, CRSReply, CRSSession
from crsim.llm.providers.scripted import ScriptedProvider
from crsim.llm.types import Message, ResolvedGeneration
from crsim.model.dialogue import Dialogue, ReplyOption, Role, TerminationReason
from crsim.model.domain import Domain
from crsim.runner.loop import run_dialogue
from crsim.sim.base import UserSimulator
from sim.test_prompt_simulators import decision, dual, is_decision, movie_fan, single

BUTTONS = [
    ReplyOption(label="Seen it", payload="I have already watched it."),
    ReplyOption(label="Something else"),
]


class Recorder:
    """A scripted model that keeps every prompt and answers from a queue (decisions: continue)."""

    def __init__(self, *answers: str) -> None:
        self.prompts: list[str] = []
        self.queue = list(answers)
        self.provider = ScriptedProvider(self)

    def __call__(self, messages: list[Message], generation: ResolvedGeneration) -> str:
        self.prompts.append("\n".join(str(m["content"]) for m in messages))
        return decision("continue") if is_decision(generation) else self.queue.pop(0)


async def test_the_buttons_are_in_the_prompt_and_a_label_picks_one(domain: Domain) -> None:
    model = Recorder("Hi, I want a sci-fi film.", "something else!", "Who directed it?", "Who directed it?")
    sim = single(model.provider, domain)
    await sim.start(movie_fan())
    turn = await sim.respond(CRSReply("How about Titanic (1997)?", options=BUTTONS))
    assert '"Seen it", "Something else"' in model.prompts[-1]
    assert "reply with its text alone" in model.prompts[-1]
    assert "Seen it" not in model.prompts[0]  # no buttons offered before
    assert turn.text == "something else!" and turn.option == BUTTONS[1]
    again = await sim.respond(CRSReply("What about The Matrix (1999)?"))  # no buttons now
    assert "buttons" not in model.prompts[-1] and again.option is None


async def test_the_stop_prompt_sees_the_buttons_and_the_replies_without_progress(domain: Domain) -> None:
    model = Recorder("Hi, I want a sci-fi film.", "Any sci-fi?", "Something with Keanu Reeves?")
    sim = dual(model.provider, domain, no_progress_patience=5)
    await sim.start(movie_fan())
    await sim.respond(CRSReply("Sorry, I couldn't find any films like that."))
    await sim.respond(CRSReply("How about Titanic (1997)?", options=BUTTONS))
    stop_prompt = next(p for p in reversed(model.prompts) if "stop now or continue" in p)
    assert "could not help or repeated itself: 1." in stop_prompt
    assert 'offers the buttons: "Seen it", "Something else"' in stop_prompt


class StuckCRS(BaseCRS):
    async def respond(self, session: CRSSession, text: str) -> CRSReply:
        return CRSReply("Sorry I can't help you with that.")


async def _stuck(sim: UserSimulator) -> Dialogue:
    return await run_dialogue(
        sim,
        StuckCRS(),
        movie_fan(),
        dialogue_id="d",
        session=CRSSession("d", 0),
        max_turns=20,
    )


async def test_both_llm_users_leave_a_crs_that_never_progresses(domain: Domain) -> None:
    for make in (single, dual):
        model = Recorder(*[f"I am looking for sci-fi, try {i}." for i in range(20)])
        dialogue = await _stuck(make(model.provider, domain))
        assert dialogue.termination is not None
        assert dialogue.termination.reason is TerminationReason.USER_ENDED
        assert dialogue.termination.detail == "no_progress"
        assert dialogue.num_turns == 4  # the opening, then 3 replies without progress
        last = dialogue.by(Role.USER)[-1]
        assert last.annotations["stalled_turns"] == 3
        if make is dual:
            assert last.annotations["stop_decision"] == "stop"
            assert "no progress" in last.annotations["stop_reason"]
