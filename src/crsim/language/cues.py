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

from crsim.model.text import normalize


def word_set(text: str) -> frozenset[str]:
    """The distinct words of a space-separated list."""
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
NEG_BEFORE = word_set(
    "not never without hate hates hated dislike dislikes except avoid less too dont doesnt didnt cant "
    "wont isnt arent wasnt nor neither fewer against nothing"
)
#: Words after a negation cue that undo it ("dont mind horror", "not only comedies").
NEG_RELEASE = ("mind", "care", "sure", "only", "just", "bad")
#: Dismissive words shortly after a value ("horror is boring").
NEG_AFTER = word_set("boring overrated sucks suck awful terrible annoying")

# --- topics ----------------------------------------------------------------------------------------

#: Words that open a topic phrase ("about time travel"), and words that end one.
TOPIC_CUES = word_set("about involving featuring regarding with without")
TOPIC_STOP = word_set("please would maybe i if or but that s which could should might")
#: "with my kids" names company, not a topic.
WITH_SKIP = word_set(
    "my our your his her their me us friends family someone somebody kids girlfriend boyfriend wife husband "
    "partner date mom dad parents"
)
#: Chat words that carry no preference: never names, topics or free text (the domain adds its own).
FILLER = word_set(
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
ASKING = (
    r"\b(what|whats|which|where|wheres|when|how|who|tell me|do you know|can you give|could you give"
    r"|give me|is there|does|does it have|do they have)\b"
)


def request_pattern(nouns: Iterable[str], singular: Iterable[str], phrases: Iterable[str]) -> re.Pattern[str]:
    """Requests for a recommendation; `nouns` name items ("other restaurants"), `phrases` are extra
    whole requests ("what should i watch")."""
    extra = "".join(f"{re.escape(p)}|" for p in phrases)
    return re.compile(
        r"\b(recommend\w*|suggest\w*|something else|anything else|another|what else|any other"
        rf"|other (one|ones|option|options|{alternation(nouns)}|idea|ideas)"
        rf"|different (one|{alternation(singular)})|next one"
        r"|can you find|find me|help me find|give me|show me|looking for|"
        rf"{extra}any ideas|what do you (have|got)|do you have|got anything|search for)\b"
    )


def accept_pattern(verbs: Iterable[str]) -> re.Pattern[str]:
    """Acceptance of a suggestion; `verbs` are what one does with an item ("watch", "book")."""
    v = alternation(verbs)
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
    w = alternation(words)
    return (
        re.compile(rf"\b({w}|already know)\b"),
        re.compile(rf"\b(havent|have not|never|not|didnt|did not|hasnt) (\w+ )?({w})\b"),
    )


def alternation(phrases: Iterable[str]) -> str:
    """A regular-expression alternation of the phrases, each matched literally."""
    return "|".join(re.escape(p) for p in phrases)
