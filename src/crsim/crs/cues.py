"""Cue words and patterns that rule-based understanding reads user text with.

The module holds what any domain shares (greetings, negation, acceptance, "no preference"...);
words that depend on the domain (what an item is called, what one does with it, how people name
the slots, how they ask about an item) come from the domain: its slots' cues and the
`understanding` section of its phrasings (`UnderstandingSpec`), with generic defaults built from
the item noun and the slots. `domain_cues(domain)` puts both together.

Everything here matches the normalised text (lower case, no accents or punctuation, contractions
without apostrophes: "dont", "im"), so patterns spell "dont" rather than "don't".
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from crsim.crs.phrasings import phrasing
from crsim.errors import DataError
from crsim.model.domain import Domain, SlotKind, per_domain
from crsim.model.text import normalize


def _words(text: str) -> frozenset[str]:
    return frozenset(text.split())


# --- periods (numbers only; the words come from the domain) -------------------------------------

#: "1990s", "90s", "90" (followed by a separate "s"): century digits, decade digit, plural s.
DECADE = re.compile(r"(19|20)?(\d)0(s?)")
YEAR = re.compile(r"19\d\d|20[0-2]\d")

# --- numbers -------------------------------------------------------------------------------------

#: Words that bound a number, by bound; "or more" and the like follow the number, the rest precede
#: it. A domain adds its own per slot (`Slot.comparisons`).
COMPARISONS: dict[str, tuple[str, ...]] = {
    "at_least": (
        "at least",
        "a minimum of",
        "minimum",
        "min",
        "no less than",
        "no fewer than",
        "not less than",
        "or more",
        "or above",
        "or higher",
        "or better",
        "and up",
        "and above",
        "plus",
    ),
    "at_most": (
        "at most",
        "up to",
        "a maximum of",
        "maximum",
        "max",
        "no more than",
        "not more than",
        "or less",
        "or fewer",
        "or below",
        "or lower",
        "or under",
        "tops",
    ),
    "above": ("more than", "over", "above", "greater than", "higher than", "better than"),
    "below": ("less than", "fewer than", "under", "below", "lower than", "cheaper than", "within"),
}
#: How a bounded number is stored as a slot value ("at least 4" -> ">=4").
BOUND_SIGNS = {"at_least": ">=", "at_most": "<=", "above": ">", "below": "<"}
#: Bound phrases that follow the number ("4 or more").
_AFTER_WORDS = ("or", "and", "plus", "tops")


def bound_phrases(
    extra: Mapping[str, Iterable[str]],
) -> tuple[dict[tuple[str, ...], str], dict[tuple[str, ...], str]]:
    """(before, after): bound phrases as token tuples -> bound, the generic ones plus `extra`."""
    before: dict[tuple[str, ...], str] = {}
    after: dict[tuple[str, ...], str] = {}
    for bound in COMPARISONS:
        for phrase in (*COMPARISONS[bound], *extra.get(bound, ())):
            key = tuple(normalize(phrase).split())
            if key:
                (after if key[0] in _AFTER_WORDS else before)[key] = bound
    return before, after


#: Numbers written as words ("three cylinders"), read only next to a word naming the slot.
_NUMBERS = ("zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten", "eleven")
NUMBER_WORDS = {word: str(n) for n, word in enumerate((*_NUMBERS, "twelve"))}

# --- negation -------------------------------------------------------------------------------------

#: A few words before a value that turn it into a dislike ("not horror", "dont want violent").
NEG_BEFORE = _words(
    "not never without hate hates hated dislike dislikes except avoid less too dont doesnt didnt cant "
    "wont isnt arent wasnt nor neither fewer against nothing"
)
#: Words after a negation cue that undo it ("dont mind horror", "not only comedies").
NEG_RELEASE = ("mind", "care", "sure", "only", "just", "bad")
#: Dismissive words shortly after a value ("horror is boring").
NEG_AFTER = _words("boring overrated sucks suck awful terrible annoying")

# --- topics ----------------------------------------------------------------------------------------

#: Words that open a topic phrase ("about time travel"), and words that end one.
TOPIC_CUES = _words("about involving featuring regarding with without")
TOPIC_STOP = _words("please would maybe i if or but that s which could should might")
#: "with my kids" names company, not a topic.
WITH_SKIP = _words(
    "my our your his her their me us friends family someone somebody kids girlfriend boyfriend wife husband "
    "partner date mom dad parents"
)
#: Chat words that carry no preference: never names, topics or free text (the domain adds its own).
FILLER = _words(
    "hmm hm um uh lol pls plz really kind sort type mood feel feeling prefer fan enjoy enjoyed loved liked "
    "favorite favourite recommend recommendation suggest suggestion else another different other nice cool "
    "awesome fine sounds sound interesting tonight today weekend evening night ll ve d m re s "
    "would could should perhaps probably actually lot lots stuff thing things need got get give show find "
    "ones new old great good best im ill ive id dont doesnt didnt "
    "cant wont isnt havent thats whats lets its hate hated nah yep yup picky fussy"
)
#: Words that start a new clause; "anything but" is a negation instead.
CONTRAST = ("but", "though", "although", "however")

# --- intents ---------------------------------------------------------------------------------------

GREETING = re.compile(r"^(hi|hello|hey|hiya|howdy|greetings|yo|good (morning|afternoon|evening))\b")
GOODBYE = re.compile(
    r"\b(bye|goodbye|good bye|see (you|ya)|farewell|cya|thats all|that is all|im done|i am done|good night"
    r"|have a (good|nice|great) (day|night|evening|one)|gotta go|got to go|take care|nothing else)\b"
)
THANKS = re.compile(r"\b(thanks|thank you|thank u|thx|ty|cheers)\b")
NO_PREFERENCE = re.compile(
    r"\b((dont|do not|doesnt|does not) (mind|care|matter)|no (preference|preferences|idea|opinion)"
    r"|whatever|not (picky|fussy|sure|really|particularly)|surprise me|open to anything|up to you|anything"
    r"|any (is|are|works)|none in particular|no one in particular|nobody|im easy|no favou?rites?"
    r"|either (is|works|way)|no particular|all good|i have none|none|no strong \w+|not fussed|no real \w+"
    r"|(dont|do not) (really )?have (a|any) (preference|favou?rite|opinion)|fine with any\w*)\b"
)
REJECT = re.compile(
    r"(^(no|nah|nope|meh)\b|\b(not for me|not my (thing|cup|type|style|taste|kind)"
    r"|not (really |that |too )?(interested|into|feeling|keen)"
    r"|(doesnt|does not|dont|do not|didnt) (sound|look|seem|like|want|enjoy|appeal)"
    r"|not (a fan|keen|great|good|what i)|no thanks|no thank you|rather not|pass on|boring|hated it"
    r"|dislike (it|that)|not that one|not this one|skip (it|that)|(wasnt|isnt|not) (really )?for me)\b"
    r"|\b(dont|do not|doesnt)\b.*\bfor me\b)"
)
#: Rejections that are only a bare "no": after a yes/no question they answer it instead.
BARE_NO = ("no", "nah", "nope", "meh")
#: A leading bare "no" (alone or before a comma) denies; "no horror" does not.
LEADING_NO = (["no"], ["nah"], ["nope"], ["n"])
AFFIRM = re.compile(
    r"^(yes|yeah|yep|yup|sure|ok|okay|of course|please|definitely|absolutely|why not|alright|y)\b"
)
DENY = re.compile(r"^(not really|no thanks|no thank you|not now|nothing)\b")
LIKE = re.compile(r"\b(like|likes|love|loved|enjoy|enjoyed|favou?rite|similar|fan)\b")
WAS_GOOD = re.compile(
    r"\b(it|that|which) (was|is) (good|great|amazing|awesome|fantastic|excellent|brilliant)\b"
)
HATE = re.compile(r"\b(hate|hated|didnt like|dont like|did not like|do not like|disliked)\b")
#: "is it a comedy?", "does it have parking?": a value named in a question about the item asks for
#: that slot.
IS_IT = re.compile(
    r"(is|isnt) (it|that|this)\b"
    r"|(does|doesnt|do|dont) (it|that|this|they|that one|this one) (have|offer|include|provide|come with)\b"
)
#: A question that is only a slot's name with a determiner ("Its director?", "And the year?"): it asks
#: for that slot of the item under discussion (see `bare_question`).
_BARE_QUESTION = re.compile(
    r"^(?:and |so |also |then |what about |how about )?(?:(?:its|the|their|his|her) )?(?P<noun>[a-z]+)$"
)


def bare_question(sentence: str, slots: Iterable[str]) -> str | None:
    """The slot of `slots` a bare question names ("its director", normalised, from a sentence that
    ended with "?"): its name, or its name with a plural "s"; else None."""
    match = _BARE_QUESTION.match(sentence)
    if match is None:
        return None
    noun = match.group("noun")
    for slot in slots:
        name = slot.replace("_", " ")
        if noun in (name, f"{name}s"):
            return slot
    return None


#: Question words before a slot's cue that make a sentence an inquiry about the item ("whats the phone").
_ASKING = (
    r"\b(what|whats|which|where|wheres|when|how|who|tell me|do you know|can you give|could you give"
    r"|give me|is there|does|does it have|do they have)\b"
)


def request_pattern(nouns: Iterable[str], singular: Iterable[str], phrases: Iterable[str]) -> re.Pattern[str]:
    """Requests for a recommendation; `nouns` name items ("other restaurants"), `phrases` are extra
    whole requests ("what should i watch")."""
    extra = "".join(f"{re.escape(p)}|" for p in phrases)
    return re.compile(
        r"\b(recommend\w*|suggest\w*|something else|anything else|another|what else|any other"
        rf"|other (one|ones|option|options|{_alternation(nouns)}|idea|ideas)"
        rf"|different (one|{_alternation(singular)})|next one"
        r"|can you find|find me|help me find|give me|show me|looking for|"
        rf"{extra}any ideas|what do you (have|got)|do you have|got anything|search for)\b"
    )


def accept_pattern(verbs: Iterable[str]) -> re.Pattern[str]:
    """Acceptance of a suggestion; `verbs` are what one does with an item ("watch", "book")."""
    v = _alternation(verbs)
    return re.compile(
        r"\b((sounds|sound|looks|seems) (good|great|interesting|perfect|awesome|fun|nice|cool|amazing"
        rf"|fantastic|excellent|lovely|promising|right|like a plan)|(ill|i will) ({v}|take|check|try"
        rf"|go with|give|see)|(going|gonna) (to )?({v}|check|see)|perfect|great choice|excellent|exactly"
        rf"|i(d| would)? (like|love) (it|that|this)|lets (go with|{v}|do)|(that|this|it) (one )?(works"
        rf"|will do|is perfect)|(its|thats) perfect|works for me|({v}) (it|that|this)|add (it|that)"
        r"|thats (the one|it)"
        r"|sold|im in|count me in|(good|nice) (one|pick|choice|idea)|yes please|sure thing)\b"
    )


def seen_patterns(words: Iterable[str]) -> tuple[re.Pattern[str], re.Pattern[str]]:
    """'Already seen it' and its negation; `words` say that one knows an item ("watched", "been there")."""
    w = _alternation(words)
    return (
        re.compile(rf"\b({w}|already know)\b"),
        re.compile(rf"\b(havent|have not|never|not|didnt|did not|hasnt) (\w+ )?({w})\b"),
    )


def _alternation(phrases: Iterable[str]) -> str:
    return "|".join(re.escape(p) for p in phrases)


# --- the domain's part ----------------------------------------------------------------------------


class _Spec(BaseModel):
    model_config = ConfigDict(extra="forbid")


class PeopleSpec(_Spec):
    """Slots whose values are person names, told apart by the words just before a name."""

    slots: list[str] = Field(default_factory=list, description="People slots; ties go to the first.")
    cues: dict[str, list[str]] = Field(default_factory=dict, description="Slot -> words before a name.")
    title_after: tuple[str, str] | None = Field(
        None, description="(word, slot): 'tom hanks in big' names an item of that person's after the word."
    )


class PeriodSpec(_Spec):
    """A slot of release periods, read from years, decades and words like 'recent'."""

    slot: str | None = None
    decade_words: dict[str, int] = Field(default_factory=dict)
    recent: list[str] = Field(default_factory=list)
    classic: list[str] = Field(default_factory=list)
    new_before: list[str] = Field(default_factory=list, description="'new' means recent before these.")
    before: list[str] = Field(default_factory=list)
    since: list[str] = Field(default_factory=list)
    relative: list[str] = Field(default_factory=list, description="'newer'/'older' than the item shown.")
    degree: list[str] = Field(default_factory=list, description="'more'/'less' before a period word.")
    recent_years: int = Field(8, ge=0)
    classic_until: int = 1979


class TopicSpec(_Spec):
    slot: str | None = None


class UnderstandingSpec(_Spec):
    """The `understanding` section of a domain's phrasings; every field has a generic default."""

    item_words: list[str] | None = Field(None, description="Singular nouns for an item (default: the noun).")
    item_words_plural: list[str] | None = None
    consume: list[str] = Field(
        default_factory=lambda: ["book", "visit", "go for"], description="What one does with an item."
    )
    seen: list[str] = Field(
        default_factory=lambda: ["been there", "tried", "visited", "stayed"],
        description="Words saying one knows an item already.",
    )
    request_phrases: list[str] = Field(default_factory=list)
    filler: str | None = Field(None, description="More filler words (default: the words of the slots' cues).")
    slot_words: dict[str, str] | None = Field(
        None, description="Slot -> words naming it ('any cuisine is fine')."
    )
    inquiries: dict[str, str] | None = Field(None, description="Slot -> regex of questions asking for it.")
    inquiry_unless_stated: list[str] | None = Field(
        None, description="Inquiries dropped when the same text states a value of the slot (default: all)."
    )
    only_forms: dict[str, dict[str, list[str]]] = Field(
        default_factory=dict, description="Slot -> value -> the only phrases naming it (ambiguous labels)."
    )
    prompt_verbs: dict[str, str] = Field(
        default_factory=lambda: {"consume": "try", "consumed": "tried", "seen": "tried"},
        description="Verbs LLM prompts use for an item: what one does with it, did, has done.",
    )
    prompt_nouns: dict[str, str] = Field(
        default_factory=dict,
        description="Nouns LLM prompts use for the people of a domain: `user` (who uses the items, e.g. "
        "'reader'), `user_role` ('a book reader'), `expert` ('a literary critic'), `kind` (the noun after "
        "a kind of item: 'novel'), `aspects` (what one may come to like: 'a theme, an author'), "
        "`details` (examples of what one may ask about an item: 'its author, pages, ...'), `facts` (what "
        "the `llm` CRS's prompt says the candidates come with: 'author, pages, price') and "
        "`contradiction` (an example of a contradictory profile, for RecUserSim's profile check); "
        "defaults from the item noun and the slots.",
    )
    item_text: list[str] | None = Field(
        None, description="Attributes (after the title) of an item's text for candidate retrieval."
    )
    chat_words: str | None = Field(
        None, description="Words retrieval ignores (default: the slots' cue words)."
    )
    people: PeopleSpec = Field(default_factory=PeopleSpec)
    period: PeriodSpec = Field(default_factory=PeriodSpec)
    topics: TopicSpec = Field(default_factory=TopicSpec)


@dataclass(frozen=True)
class Cues:
    """The cue words and patterns of one domain (generic ones plus the domain's)."""

    spec: UnderstandingSpec
    filler: frozenset[str]
    slot_words: Mapping[str, frozenset[str]]
    request: re.Pattern[str]
    accept: re.Pattern[str]
    seen: re.Pattern[str]
    not_seen: re.Pattern[str]
    inquiries: Mapping[str, re.Pattern[str]]
    inquiry_unless_stated: frozenset[str] | None
    people_cues: Mapping[str, frozenset[str]]
    period_words: frozenset[str]


#: Cues by domain, built once per domain object (keyed by its item collection, as `lexicon_for`).
@per_domain
def domain_cues(domain: Domain) -> Cues:
    """The domain's cue words: its `understanding` phrasings over generic defaults from noun and slots.

    Built once per domain object and shared (`per_domain`): an LLM user builds its policy per
    dialogue, and building the cues cost about as much as one of its LLM calls on the client side
    (bench/llm_overhead.py).
    """
    return _build_cues(domain)


def _build_cues(domain: Domain) -> Cues:
    spec = understanding_spec(phrasing(domain, "understanding"))
    nouns = spec.item_words or [domain.item_noun]
    plural = spec.item_words_plural or [domain.item_noun_plural]
    slot_names = {s.name: _slot_words(s.name, s.cues) for s in domain.informable}
    filler = _words(spec.filler) if spec.filler is not None else frozenset().union(*slot_names.values())
    slot_words = (
        {k: _words(v) for k, v in spec.slot_words.items()} if spec.slot_words is not None else slot_names
    )
    seen, not_seen = seen_patterns(spec.seen)
    period = spec.period
    return Cues(
        spec=spec,
        filler=FILLER | filler,
        slot_words=slot_words,
        request=request_pattern([*nouns, *plural], nouns, spec.request_phrases),
        accept=accept_pattern(spec.consume),
        seen=seen,
        not_seen=not_seen,
        inquiries=_inquiries(domain, spec),
        inquiry_unless_stated=None
        if spec.inquiry_unless_stated is None
        else frozenset(spec.inquiry_unless_stated),
        people_cues={k: frozenset(v) for k, v in spec.people.cues.items()},
        period_words=frozenset([*period.recent, *period.classic, *period.decade_words, "new"])
        if period.slot
        else frozenset(),
    )


def prompt_words(domain: Domain) -> dict[str, str]:
    """The words LLM prompts name a domain's items with: `item`, `items`, and the verbs `consume`,
    `consumed` and `seen` (what one does with an item, did, has done; movies: watch, watched, seen;
    the `understanding.prompt_verbs` phrasing)."""
    spec = understanding_spec(phrasing(domain, "understanding"))
    defaults = UnderstandingSpec().prompt_verbs
    return {"item": domain.item_noun, "items": domain.item_noun_plural, **defaults, **spec.prompt_verbs}


def prompt_nouns(domain: Domain) -> dict[str, str]:
    """The nouns LLM prompts name a domain's people and item features with (`user`, `user_role`,
    `expert`, `kind`, `aspects`, `details`, `facts`, `contradiction`; see `UnderstandingSpec.prompt_nouns`):
    the domain's `understanding.prompt_nouns` phrasing over generic ones made from the item noun and
    the slots."""
    spec = understanding_spec(phrasing(domain, "understanding"))
    slots = [s.name.replace("_", " ") for s in domain.informable if s.kind != SlotKind.TEXT][:3]
    aspects = ", ".join(f"{'an' if name[:1] in 'aeiou' else 'a'} {name}" for name in slots)
    requestable = [s.name.replace("_", " ") for s in domain.requestable][:4]
    defaults = {
        "user": "person",
        "user_role": "a person",
        "expert": f"an expert on {domain.item_noun_plural}",
        "kind": domain.item_noun,
        "aspects": aspects or f"something about the {domain.item_noun}",
        "details": "its " + ", ".join([*requestable, "..."]) if requestable else "anything about it",
        "facts": ", ".join(dict.fromkeys(s.label for s in domain.slots.values())) or "their details",
        "contradiction": f"disliking one kind of {domain.item_noun} while loving another that is "
        "much the same, or a wish that no item could meet",
    }
    return {**defaults, **spec.prompt_nouns}


def understanding_spec(raw: Mapping[str, Any] | None) -> UnderstandingSpec:
    """The `understanding` section, validated; errors name the field."""
    try:
        return UnderstandingSpec.model_validate(dict(raw or {}))
    except ValidationError as exc:
        err = exc.errors()[0]
        field = ".".join(str(p) for p in err["loc"])
        raise DataError(err["msg"], path="phrasings.understanding", field=field) from None


def _slot_words(name: str, cues: Iterable[str]) -> frozenset[str]:
    words = set(normalize(name.replace("_", " ")).split())
    for cue in cues:
        words.update(normalize(cue).split())
    return frozenset(words)


def _inquiries(domain: Domain, spec: UnderstandingSpec) -> dict[str, re.Pattern[str]]:
    """Questions about the item under discussion, by the slot they ask for: the domain's patterns,
    else a question word before one of a requestable slot's cues ("whats the phone number")."""
    if spec.inquiries is not None:
        try:
            return {slot: re.compile(pattern) for slot, pattern in spec.inquiries.items()}
        except re.error as exc:
            raise DataError(
                f"not a regular expression ({exc})", field="phrasings.understanding.inquiries"
            ) from None
    found = {}
    for slot in domain.requestable:
        names = sorted(
            _slot_words(slot.name, slot.cues) if not slot.cues else {normalize(c) for c in slot.cues}
        )
        found[slot.name] = re.compile(rf"{_ASKING}.*\b({_alternation(names)})\b")
    return found
