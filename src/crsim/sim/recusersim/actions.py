"""The user actions the action module chooses from, and their registry.

An action is data: a name, what it means (shown to the model that chooses), what the user does
when it is chosen (shown to the model that writes the reply), whether it needs a recommendation
on the table, and whether it ends the conversation. The built-in six follow RecUserSim's five
(feedback split into positive and negative); `chit_chat` is registered too but not chosen unless a
config lists it. The actions are the `crsim.recusersim_action` entry points (the built-ins below are
declared in pyproject.toml); a plug-in declares its own there, and code (a test, a notebook) may
add one with `register_action(UserAction(...))`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from crsim.core.errors import ConfigError
from crsim.core.plugins import Registry


@dataclass(frozen=True)
class UserAction:
    """One thing a simulated user can do in a turn."""

    name: str
    #: What the action is, for the action-selection prompt; `{details}` stands for examples of the
    #: details one can ask about an item, in the domain's words (`crsim.language.domain_cues.prompt_nouns`).
    meaning: str
    #: What to write, for the response prompt.
    instruction: str
    #: Only available once the recommender has recommended something.
    needs_recommendation: bool = False
    #: Choosing it ends the conversation (and switches refinement off for the closing message).
    ends_dialogue: bool = False


#: The user actions by name (entry points `crsim.recusersim_action`, each naming a `UserAction`).
action_catalogue: Registry[UserAction] = Registry("recusersim_action")


def register_action(action: UserAction) -> UserAction:
    """Make `action` available by name; registering a different action under a taken name is an error."""
    if not action.name.isidentifier():
        raise ValueError(f"action name {action.name!r}: expected a word of letters, digits and underscores")
    if action.name in action_catalogue:
        if action_catalogue.get(action.name) != action:
            raise ValueError(f"user action {action.name!r} is already registered")
        return action
    return action_catalogue.add(action.name, action)


def action_names() -> list[str]:
    return action_catalogue.names()


def get_action(name: str, where: str = "") -> UserAction:
    """The action `name`; a ConfigError naming `where` and the known names otherwise."""
    try:
        found = action_catalogue.get(name)
    except ConfigError as exc:
        raise ConfigError(f"{where}: {exc}" if where else str(exc)) from None
    if not isinstance(found, UserAction) or found.name != name:
        raise ConfigError(
            f"{where or 'actions'}: entry point {name!r} does not name a UserAction called {name!r}"
        )
    return found


def get_actions(names: Iterable[str], where: str) -> list[UserAction]:
    """Each of `names` resolved, with the position of an unknown one in the error (`where[i]`)."""
    return [get_action(name, f"{where}[{i}]") for i, name in enumerate(names)]


REQUEST = UserAction(
    "request_recommendation",
    "ask for a recommendation, or for a different one when the last did not suit you",
    "Ask the recommender for a recommendation.",
)
CLARIFY = UserAction(
    "clarify_preference",
    "tell the recommender more about what you like or want, so it can do better",
    "Tell the recommender one or more of your preferences that it does not know yet or got wrong.",
)
POSITIVE = UserAction(
    "positive_feedback",
    "say that you like the recommended item (with end_conversation once it is what you wanted)",
    "Say that the recommended item appeals to you and why.",
    needs_recommendation=True,
)
NEGATIVE = UserAction(
    "negative_feedback",
    "say that the recommended item does not suit you",
    "Say that the recommended item does not suit you and why.",
    needs_recommendation=True,
)
INQUIRE = UserAction(
    "inquire_attribute",
    "ask about details of the recommended item that you still want to know ({details})",
    "Ask about one detail of the recommended item that matters to you.",
    needs_recommendation=True,
)
END = UserAction(
    "end_conversation",
    "end the conversation: you found something you are happy with, or you give up",
    "End the conversation politely in your own way (thank them, or say you will look elsewhere).",
    ends_dialogue=True,
)
CHIT_CHAT = UserAction(
    "chit_chat",
    "make small talk that is not about the recommendation",
    "Add a short remark of small talk, as people do in a chat.",
)

#: The actions a simulator chooses from unless its config says otherwise (RecUserSim's five).
DEFAULT_ACTIONS = (
    REQUEST.name,
    CLARIFY.name,
    POSITIVE.name,
    NEGATIVE.name,
    INQUIRE.name,
    END.name,
)
