"""Rules over one message that both generation and analysis use: titles in text, a CRS message's
body, cut endings, end markers, repeats, and who is speaking (a user in the recommender's
voice, a CRS in the seeker's voice, text about the message instead of the message).

Each rule is deterministic and cheap (regular expressions and string similarity, no model call), so
the LLM users and the `llm` CRS check every draft with them (and ask again when one fails) and
`crsim analyze behaviour` counts the same rules on finished dialogues; docs/behaviour.md states each
rule with its known false positives and negatives. Sentences are split by `crsim.language.sentences`.
"""

from __future__ import annotations

import re
import unicodedata
from difflib import SequenceMatcher
from functools import lru_cache
from itertools import pairwise

from rapidfuzz import fuzz

from crsim.model.domain import Domain
from crsim.model.items import Item
from crsim.model.text import STOPWORDS, near_duplicate, normalize, split_title_year, unarticle

#: rapidfuzz `fuzz.partial_ratio` from which a long user message counts as copied out of the CRS message.
PARROT_PARTIAL = 95.0
#: Characters a user message needs before the partial (substring) parroting rule applies.
PARROT_MIN_CHARS = 30
#: Words in a row a user message copies from the CRS message before it to parrot it (a clause, more
#: than a value or a short phrase echoed back).
PARROT_RUN_WORDS = 8
#: Words in a row two consecutive user messages share for the later one to say the earlier again (a
#: whole sentence repeated inside a longer message).
USER_REPEAT_RUN_WORDS = 10
#: rapidfuzz `fuzz.partial_ratio` from which a long title counts as named in a text (spelling slips).
TITLE_FUZZY = 90.0
#: Characters (normalised, without the year) from which a title may match fuzzily rather than exactly.
TITLE_FUZZY_MIN_CHARS = 12
#: In a fuzzy match each title word must match a word of the text in turn: words shorter than this
#: exactly, longer ones at rapidfuzz `fuzz.ratio` >= TITLE_WORD_FUZZY (a slip inside a word).
TITLE_WORD_MIN_CHARS = 4
TITLE_WORD_FUZZY = 80.0

#: A closing "Label: Title (Year); Title (Year)." that a CRS appended to name its listed items (crsim's
#: `llm` CRS writes "Suggestion: X." when its text did not name X). It is a label, not the message.
_LABEL_START = re.compile(r"\s+[A-Z][a-z]+:(?=\s)")  # the space after it stays for the next label
#: End-of-dialogue markers a simulator's model may write into the message itself: bracketed anywhere
#: ("[END]", "<|endoftext|>", any case), or a bare upper-case word closing the message ("Bye! END").
END_MARKER = re.compile(r"\[\s*(?:end|stop|done|exit|quit)\s*\]|<\|?\s*end(?:oftext)?\s*\|?>", re.I)
_BARE_END = re.compile(r"(?:^|(?<=[\s.!?,;:]))(?:END|STOP|DONE|EXIT|QUIT)[.!]?\s*$")
#: A message ends complete on one of these (after trailing spaces): sentence punctuation, closing
#: quotes and brackets. An ellipsis is a cut mark, not an ending (see `ends_cut`).
_COMPLETE_END = set(".!?\"')]}»”’*")
_ELLIPSIS = ("…", "...")
#: The number of a list item closing a message ("... 3."); an open item when the item before it is
#: numbered earlier in the message (see `_open_list_item`).
_LIST_NUMBER = re.compile(r"(?:^|\s)(\d{1,2})[.)]$")
#: Signs that a message's words were shuffled: it starts with a lower-case word, a lower-case word
#: follows the end of a sentence ("Kohinoor. like might"; abbreviations such as "e.g. the" aside), or
#: a word that starts sentences stands capitalised after a lower-case word ("might like You").
_SCRAMBLE_SIGNS = (
    re.compile(r"^\W*[a-z]"),
    re.compile(
        r"\b[a-z]+ (?:How|What|Which|Where|When|You|Your|Have|Okay|Hi|Hello|Tell|Can|Could|Would|Do|Does|"
        r"Is|Are|And|Of|By|Got|Noted)\b"
    ),
    re.compile(r"(?<!\be\.g)(?<!\bi\.e)(?<!\betc)(?<!\bvs)(?<!\bapprox)[.!?]\s+[a-z]"),
)


def fold_spaces(text: str) -> str:
    """Case-, accent- and punctuation-insensitive form of a message (for duplicate checks)."""
    return normalize(text)


def shared_run(a: str, b: str, leave_out: tuple[str, ...] = ()) -> int:
    """The longest run of consecutive words (normalised) that both texts hold, not counting words
    inside the `leave_out` phrases (titles: quoting an item's long title copies nothing)."""
    x, y = normalize(a).split(), normalize(b).split()
    for phrase in (normalize(p).split() for p in leave_out):
        x, y = _blank(x, phrase, "\x00"), _blank(y, phrase, "\x01")
    if not x or not y:
        return 0
    match = SequenceMatcher(None, x, y, autojunk=False).find_longest_match(0, len(x), 0, len(y))
    return match.size


def _blank(words: list[str], phrase: list[str], mark: str) -> list[str]:
    """`words` with every occurrence of `phrase` replaced by `mark`s (a mark matches nothing in the
    other text, whose marks differ)."""
    size = len(phrase)
    if not size:
        return words
    out, i = [], 0
    while i < len(words):
        if words[i : i + size] == phrase:
            out += [mark] * size
            i += size
        else:
            out.append(words[i])
            i += 1
    return out


def repeats(earlier: str, later: str, run_words: int | None = None) -> bool:
    """Whether `later` says `earlier` again: a near-duplicate, or (with `run_words`) the two share a
    run of at least that many words in a row (a sentence said again inside a longer message)."""
    if near_duplicate(earlier, later):
        return True
    return run_words is not None and shared_run(earlier, later) >= run_words


def repeated(texts: list[str], run_words: int | None = None) -> list[int]:
    """1-based positions (among `texts`) of the messages that repeat the one before them (`repeats`)."""
    return [n + 2 for n, (a, b) in enumerate(pairwise(texts)) if repeats(a, b, run_words)]


#: A reply that states no preference ("I don't mind.", "Anything is fine with me.", "No strong
#: feelings about that."): the same words answer each new question, they do not say a message again.
INDIFFERENT = re.compile(
    r"^\W*(?:\w+[,.!]?\s+){0,2}(?:i (?:really )?(?:don'?t|do not) (?:mind|care|have (?:a|any) (?:strong )?"
    r"preference)|(?:i have )?no (?:strong |real |particular )?(?:preferences?|feelings?|opinion)|"
    r"anything(?: is| would be)? (?:fine|ok|okay|good)|(?:it )?(?:doesn'?t|does not) matter|not fussed|"
    r"(?:either|any|whatever)(?: one)? (?:is|would be|will do|works)|i'?m (?:easy|flexible|open))\b",
    re.I,
)


def indifferent(text: str) -> bool:
    """Whether a short reply says the user has no preference (`INDIFFERENT`)."""
    return len(text.split()) <= 10 and INDIFFERENT.search(text.replace("’", "'")) is not None


def parrots(user: str, crs: str, titles: tuple[str, ...] = ()) -> bool:
    """Whether a user message repeats the CRS message before it: a near-duplicate, a user message of
    at least PARROT_MIN_CHARS characters found almost verbatim inside the CRS message, or a run of
    PARROT_RUN_WORDS words copied from it (not counting the `titles` the CRS named)."""
    if near_duplicate(user, crs):
        return True
    x, y = fold_spaces(user), fold_spaces(crs)
    if len(x) >= PARROT_MIN_CHARS and len(y) >= len(x) and fuzz.partial_ratio(x, y) >= PARROT_PARTIAL:
        return True
    return shared_run(user, crs, titles) >= PARROT_RUN_WORDS


def _only_titles(tail: str, listed: list[Item]) -> bool:
    """Whether `tail` is nothing but titles of listed items ("Heat (1995); Up (2009)."), each with or
    without its year."""
    names = {normalize(item.display_title) for item in listed} | {normalize(item.title) for item in listed}
    parts = [normalize(part) for part in tail.strip().rstrip(".").split(";")]
    return all(part in names for part in parts)


def body(text: str, listed: list[Item]) -> str:
    """A CRS message without a closing label that lists its items' titles ("... Suggestion: Heat
    (1995)."): what the CRS wrote itself. The label is a capitalised word and a colon followed by
    nothing but titles of listed items, separated by ';' (a title may hold a colon: "Suggestion: Star
    Wars: Episode IV - A New Hope (1977)."); unchanged when there is none."""
    if not listed:
        return text
    for match in _LABEL_START.finditer(text):
        if _only_titles(text[match.end() :], listed):
            return text[: match.start()]
    return text


def end_marker(text: str) -> str | None:
    """The end-of-dialogue marker written in a message (`END_MARKER`, or a bare "END" closing it), or
    None."""
    match = END_MARKER.search(text) or _BARE_END.search(text)
    return match.group().strip() if match else None


def _open_list_item(text: str) -> bool:
    """Whether a message ends on the number of a list item with nothing after it, the item before it
    numbered earlier ("1. Heat (1995) ... 2."); "I'd give it a 9." is no list."""
    match = _LIST_NUMBER.search(text)
    if match is None or int(match.group(1)) < 2:
        return False
    before = int(match.group(1)) - 1
    return re.search(rf"(?:^|\s){before}[.)]\s", text[: match.start()]) is not None


def ends_cut(text: str) -> bool:
    """Whether a message stops without a complete ending: its last character is a letter, digit or a
    mid-sentence mark (comma, colon, dash, opening bracket), it ends on an ellipsis, or on the number
    or bullet of a list item with nothing after it ("... 3."). A message that closes on an end marker
    ("END", "[END]") ended on purpose and is not cut."""
    stripped = text.rstrip()
    if not stripped or _BARE_END.search(stripped) or END_MARKER.search(stripped[-16:]):
        return False
    if stripped.endswith(_ELLIPSIS) or _open_list_item(stripped):
        return True
    last = stripped[-1]
    if last in _COMPLETE_END:
        return False
    # Emoji and other symbols close a chat message as well as a full stop does.
    return not unicodedata.category(last).startswith("S")


def scrambled(text: str) -> bool:
    """Whether a message shows shuffled word order (`_SCRAMBLE_SIGNS`): a speaker whose words were
    shuffled loses its last word's punctuation by chance, so a missing ending is no sign of a cut."""
    return any(sign.search(text) for sign in _SCRAMBLE_SIGNS)


@lru_cache(maxsize=65536)
def _title_key(title: str) -> tuple[str, bool]:
    """The normalised title (catalogue 'Matrix, The' read as 'The Matrix', a trailing '(year)' left
    out) and whether it is weak: one short word or only function words, easy to hit by accident."""
    words = normalize(unarticle(split_title_year(title)[0])).split()
    content = [w for w in words if w not in STOPWORDS and w not in ("the", "a", "an")]
    weak = not content or (len(words) == 1 and len(words[0]) < 6)
    return " ".join(words), weak


def _word_close(wanted: str, seen: str) -> bool:
    if wanted == seen:
        return True
    return len(wanted) >= TITLE_WORD_MIN_CHARS and fuzz.ratio(wanted, seen) >= TITLE_WORD_FUZZY


def _fuzzy_named(key: str, normal: str) -> bool:
    """Whether some run of words of `normal` spells the title `key` with slips: as many words, each
    close to the title's word in its place, and the run at `fuzz.ratio` >= TITLE_FUZZY. A short word
    ("J" of "J Restaurant") must be exact, so a generic word next to it ("a restaurant") is no match."""
    wanted, words = key.split(), normal.split()
    size = len(wanted)
    for start in range(len(words) - size + 1):
        run = words[start : start + size]
        if all(map(_word_close, wanted, run)) and fuzz.ratio(key, " ".join(run)) >= TITLE_FUZZY:
            return True
    return False


def title_named(text: str, title: str, *, fuzzy: bool = True) -> bool:
    """Whether `text` names the title (catalogue or display form; a trailing year is not required):
    its normalised words in a row; a weak title (one short word, or only function words) only with
    the catalogue's capitalisation; a title of TITLE_FUZZY_MIN_CHARS characters or more also with
    spelling slips (`_fuzzy_named`), unless not `fuzzy`."""
    key, weak = _title_key(title)
    if not key:
        return False
    if weak:
        shown = unarticle(split_title_year(title)[0]).strip()
        return re.search(rf"(?<!\w){re.escape(shown)}(?!\w)", text) is not None
    normal = normalize(text)
    if f" {key} " in f" {normal} ":
        return True
    if not fuzzy or len(key) < TITLE_FUZZY_MIN_CHARS or len(normal) < len(key):
        return False
    return _fuzzy_named(key, normal)


def title_in(text: str, item: Item, *, fuzzy: bool = True) -> bool:
    """Whether `text` names `item` by its title (`title_named`)."""
    return title_named(text, item.title, fuzzy=fuzzy)


def title_words_in(text: str, item: Item) -> bool:
    """Whether `text` names `item` in its words, in any order: `title_in`, or a title of two or more
    words (not weak) whose every word stands somewhere in the text ("Park Jurassic (1993)."). Readers
    recognise a title whose words were shuffled; `title_in` alone asks for them in a row."""
    if title_in(text, item):
        return True
    key, weak = _title_key(item.title)
    wanted = set(key.split())
    return not weak and len(wanted) >= 2 and wanted <= set(normalize(text).split())


# --- who is speaking -------------------------------------------------------------------------------

#: Nouns of what a recommender offers besides the domain's item nouns.
_OFFERS = r"(?:one|ones|option|options|recommendations?|suggestions?|choices?|places?|picks?)"
#: What one does with an item, in any domain (watch a movie, try or visit a restaurant...).
_CONSUME = r"(?:watch|try|see|read|visit|check (?:it |them )?out|listen to|go to|book|reserve|give it a)"
#: Verbs by which someone says what they want.
_WISH = r"(?:like|prefer|want|enjoy|fancy|feel like|have in mind|usually|typically|normally)"


#: What an assistant calls itself ("I'm a chatbot", "as an AI", "a customer service AI").
_MACHINE = r"(?:ai|chatbot|chat bot|bot|assistant|language model|recommender(?: system)?|virtual agent)"
#: Not "to my friends": a user may say it would recommend an item to people it knows.
_NOT_TO_OTHERS = (
    r"(?![^.!?\n]*\bto (?:(?:my|our|his|her|their) (?:\w+ )?(?:friends?|family|partner|wife|husband|"
    r"kids|children|parents|colleagues|mates)|anyone|everyone|others|other people|friends|people)\b)"
)


#: The cues of speaking as the one who recommends or serves (`user_voice_patterns`).
_SPEAKING_AS_RECOMMENDER = (
    # speaking as the one who recommends or serves: wishing to recommend, helping "you", doing
    # something "for you", naming its own recommendations or the other side's request
    rf"\bi(?:'d| would)? (?:really )?(?:love|like|be (?:glad|happy|pleased|delighted)) to "
    rf"(?:recommend|suggest|help|assist|serve)\b{_NOT_TO_OTHERS}",
    rf"\bi(?:'m| am) (?:\w+ )?(?:happy|glad|going|pleased|delighted|ready|here|about) to "
    rf"(?:recommend|suggest)\b{_NOT_TO_OTHERS}",
    r"\b(?:help|helping|assist|assisting|serve|serving) you\b",
    r"\bi(?:'m| am) (?:\w+ ){0,2}(?:here|ready|happy|glad|designed|able|unable|capable|available|"
    r"programmed|trained) (?:to|of) (?:help|helping|assist|assisting|serve|serving|provide "
    r"(?:assistance|help|recommendations|suggestions))\b",
    r"\bi(?:'m| am) (?:always )?here for you\b",
    r"\bdesigned to (?:help|assist|recommend)\b",
    r"\bi\b[^.!?\n]{0,25}\b(?:do|find|found|get|got|book|booked|reserve|reserved|arrange|pick|picked|"
    r"choose|look up) (?:\w+ ){0,4}for you\b",
    r"\bmy (?:recommendations?|suggestions?)\b",
    r"\byour (?:request|requests|query|queries)\b",
    r"\b(?:what|which) you (?:requested|asked for)\b",
    r"\bwhat(?:'s| is) on your mind\b",
    r"\b(?:share|tell me)\b[^.!?\n]{0,30}\babout yourself\b",
    r"\byou can ask (?:me )?(?:for|about)\b",
)
#: The cues of stating or asking what the other side wants (`user_voice_patterns`).
_ASKING_WHAT_YOU_WANT = (
    # stating the other side's wish, as a recommender sums up a request ("You're looking for a
    # place that serves seafood."): a statement, not a question
    r"(?:^|[.!;\n]\s*)you(?:'re| are)? (?:looking for|searching for|hoping for|asking for|"
    r"(?:want|need)(?! to\b)) "
    r"[^.!?\n]*(?:[.!]|$)",
    # asking the other side what it wants
    rf"\b(?:what|which) (?:\w+ ){{0,3}}(?:do|would|did) you {_WISH}\b"
    r"(?! (?:to (?:recommend|suggest)|about)\b)",
    r"\b(?:are|were) you (?:looking for|in the mood for|interested in|hoping for|craving)\b",
    r"\bwhat (?:\w+ ){0,3}(?:you're|you are|are you) (?:looking for|in the mood for|hoping for|into)\b",
    r"\bdo you have (?:any |a )?(?:particular |specific )?(?:preferences?|budget)\b",
    r"\b(?:do|would) you have (?:\w+ ){0,3}in mind\b",
    r"\bwhat(?:'s| is| are) your (?:\w+ )?(?:preferences?|budget|price range|taste|pleasure)\b",
    r"\bis there (?:a|an|any) (?:\w+ ){0,2}(?:you|that you)(?:'d| would)? "
    r"(?:like|enjoy|prefer|want|have in mind)\b",
    r"\btell me (?:more )?(?:about )?(?:what you(?:'re| are)? (?:like|want|prefer|looking for)|your "
    r"(?:preferences|taste))\b",
)
#: The cues of serving, and of refusing as an assistant (`user_voice_patterns`).
_AS_ASSISTANT = (
    # serving, and refusing as an assistant
    r"\bhow (?:can|may) i (?:help|assist)\b",
    r"\bwhat can i (?:do for you|help you with)\b",
    r"\bi(?:'m| am) (?:here to help|an ai|a recommender|your assistant)\b",
    rf"\b(?:i(?:'m| am)|as) (?:just |only )?(?:a|an|your) (?:[\w-]+ ){{0,3}}{_MACHINE}\b",
    r"\b(?:i(?:'m| am) )?(?:sorry|afraid),? (?:but )?i (?:can't|cannot|can not|am unable to|'m unable to|"
    r"am not able to|'m not able to|won't be able to) (?:help|assist|provide|fulfil|fulfill|comply|"
    r"do that|answer that)\b",
    r"\bi (?:can't|cannot|can not) (?:help|assist) (?:you )?with (?:that|this|your request)\b",
    r"\bi(?:'m| am) (?:not able|unable) to (?:help|assist|provide|fulfil|fulfill|comply)\b",
    r"\bi(?:'m| am) not sure how (?:to|i can) (?:help|assist)\b",
    r"\bas an ai\b",
    r"\bai language model\b",
)


def user_voice_patterns(item_noun: str, item_noun_plural: str) -> list[re.Pattern[str]]:
    """The cues of a user message in the recommender's (or an assistant's) voice: recommending or
    offering ("I'd recommend", "You might enjoy", "Do you want to try it out?", "Would you like me
    to"), asking the other side's preferences ("What kind of food would you like?", "Are you looking
    for", "Do you have any preferences?"), serving ("How can I help", "Feel free to ask", "Enjoy your
    meal!") or refusing as an assistant does ("I'm sorry, but I can't help with that."). Asking for
    recommendations ("Do you know any good Italian places?", "What would you recommend?") is none.
    The domain's item nouns fill the cues that name what is offered."""
    nouns = "|".join(re.escape(n) for n in dict.fromkeys((item_noun, item_noun_plural)) if n)
    things = rf"(?:{nouns}|{_OFFERS})" if nouns else _OFFERS
    return [
        re.compile(cue, re.I)
        for cue in (
            *_offering_cues(nouns, things),
            *_SPEAKING_AS_RECOMMENDER,
            *_ASKING_WHAT_YOU_WANT,
            *_AS_ASSISTANT,
        )
    ]


def _offering_cues(nouns: str, things: str) -> list[str]:
    """The cues of recommending and offering; `nouns` and `things` name what is offered."""
    return [
        rf"\b(?:i|we)(?:'d| would| can| could| will|'ll)? (?:highly |strongly )?(?:recommend|suggest)\b"
        rf"{_NOT_TO_OTHERS}",
        r"\blet me (?:recommend|suggest)\b",
        rf"\bhere (?:are|is) (?:some|a few|a couple of|my|the|a|an|another) (?:\w+ )?{things}\b",
        r"\bhere (?:are|is) (?:some|a few|a couple|a list|an? (?:great|good))\b",
        r"\byou (?:might|may|will|would|should|could) (?:also |really )?"
        rf"(?:like|love|enjoy|want to {_CONSUME})\b",
        rf"\byou should (?:definitely |really )?{_CONSUME}\b",
        rf"\b(?:do|would) you (?:want|like|wanna) to {_CONSUME}",
        r"\b(?:do|would) you (?:like|want) me to\b",
        r"\bi(?:'ll| will| can| could) (?:book|reserve|make (?:a|the) reservation|find|get|look up) "
        r"(?:\w+ ){0,4}for you\b",
        r"\bif you (?:need|want) any (?:more|other|further)\b",
        r"\bfeel free to (?:ask|let me know|reach out)\b",
        r"\blet me know if you(?:'d| would)? (?:like|want|need)\b",
        r"\b(?:is there )?anything else (?:i can (?:help|do)|you(?:'d| would) like (?:me )?to know)\b",
        r"\bi (?:have|found|got) (?:some|a few|several|a couple of) (?:great |good )?"
        r"(?:recommendations|suggestions|options)\b",
        rf"\bi found (?:some|a few|several|a couple of) (?:great |good )?(?:{nouns or 'items'})\b",
        rf"(?:^|[.!]\s+)enjoy (?:the|your) (?:{things}|meal|dinner|lunch|film)\b",
        r"\b(?:glad|happy) (?:i could|to) help\b",
        r"\bbased on your (?:preferences|taste|interests?|request)\b",
        r"\bhope you enjoy\b",
        r"\bi(?:'m| am) glad you (?:found|liked|like|enjoy|enjoyed|(?:'re| are) (?:pleased|happy) with)\b",
    ]


def role_flip_patterns(domain: Domain) -> list[re.Pattern[str]]:
    """`user_voice_patterns` with the domain's item nouns."""
    return user_voice_patterns(domain.item_noun, domain.item_noun_plural)


#: "you" or "your" later in the same sentence: the CRS speaks of the user's wish ("I'm looking for a
#: place that suits your budget"), not its own; nor is it seeking an item when it needs "a bit more
#: information", "some details" or "a moment".
_NO_YOU = r"(?![^.!?]*\b(?:you(?:r|'re|'d)?|information|details|moment|minute)\b)"
#: The cues of a CRS message in the seeker's voice: saying what it wants itself ("I'm looking for a
#: cheap Italian place", "I'd like a restaurant in the north", "I want to watch a comedy"), asking
#: the other side for recommendations ("Can you recommend a good movie?", "Any suggestions?") or
#: doubting which item to take ("I'm not sure which of these to choose").
CRS_SEEKER_VOICE = [
    re.compile(p, re.I)
    for p in (
        rf"\bi(?:'m| am) (?:looking|searching|hoping) for (?:a|an|some|something|any|somewhere)\b{_NO_YOU}",
        r"\bi(?:'m| am) in the mood for\b" + _NO_YOU,
        rf"\bi(?:'d| would) (?:really )?(?:like|love|prefer) (?:a|an|some|something|somewhere|to "
        rf"(?:watch|see|eat|try|go|find|visit|have|read))\b{_NO_YOU}",
        rf"\bi (?:really )?(?:want|need|prefer|fancy|crave) (?:a|an|some|something|somewhere|to "
        rf"(?:watch|see|eat|try|go|find|visit|have|read))\b{_NO_YOU}",
        r"\b(?:can|could|would) you (?:please )?(?:recommend|suggest|help me find)\b",
        r"\b(?:do|would) you have any (?:recommendations|suggestions|ideas)\b",
        r"\bwhat (?:do|would) you (?:recommend|suggest)\b",
        r"(?:^|[.!?]\s+)any (?:recommendations|suggestions)\s*\?",
        # a chooser's doubt, not the recommender's: "I'm not sure which of these to choose"
        rf"\bi(?:'m| am) (?:not sure|unsure|undecided|torn) (?:which|what) (?:\w+ ){{0,3}}to "
        rf"(?:choose|pick|watch|go (?:for|with)|try|book)\b{_NO_YOU}",
        rf"\bi (?:can't|cannot) (?:decide|choose) (?:which|what|between)\b{_NO_YOU}",
    )
]

#: Verbs after "the user", "this person" that make it the subject of a narration ("This person is
#: looking for", "The user wants").
_NARRATED = (
    r" (?:is|was|wants|wanted|would|will|likes|liked|loves|enjoys|needs|prefers|asks|asked|has|had|says|"
    r"said|seems|mentions|mentioned|requests|requested|responds|replies|thinks|accepts|rejects|does|did|"
    r"doesn't|didn't|isn't|hasn't|should|could|can|might|may|just|also|then|now)\b"
)
#: Text about the message rather than the message: a model's preamble, a speaker label, its own role,
#: the prompt's instructions echoed, the dialogue narrated in the third person ("This person is
#: looking for a movie", "The user wants a cheap place", "the recommender's suggestion"), or the user
#: announcing its next move instead of making it ("I'll ask about the postcode and address.").
META_TEXT = [
    re.compile(p, re.I)
    for p in (
        r"\b(?:here'?s|here is) (?:my|the|a) (?:next |revised |new |rewritten |final )?"
        r"(?:message|response|reply|answer|utterance)\b",
        r"\b(?:my|the) (?:next |revised |new )?(?:message|response|reply) (?:is|would be|could be)\b",
        r"\b(?:my|your) (?:next|first) message\b",
        r"\b(?:say why|in your own words)\b",
        r"\b(?:respond|reply) to (?:your|this|that|the) message\b",
        r"\bprovide (?:you with )?(?:a|an|the|my) (?:response|reply)\b",
        r"^\W*(?:user|seeker|recommender|assistant|system|crs|customer)\s*:",
        r"\bas an ai\b",
        r"\bas (?:the|a) (?:user|seeker|simulated user|customer|person)\b",
        r"\b(?:the|this|that) seeker\b",
        r"\b(?:for|to|tell|ask|help|assist) the user\b",
        rf"\b(?:the|this|that) (?:user|person|customer|client|human)(?:'s|{_NARRATED})",
        r"\bthe (?:recommender|crs|chatbot)\b",
        r"\bthe (?:assistant|system|bot)(?:'s| (?:is|was|has|had|said|says|suggested|suggests|recommended|"
        r"recommends|asked|asks|mentioned|should|will|would)\b)",
        # what an assistant says of itself ("I'm a chatbot designed to assist users")
        rf"\b(?:i(?:'m| am)|as) (?:just |only |not )?(?:a|an) (?:[\w-]+ ){{0,3}}{_MACHINE}\b",
        r"\bi(?:'m| am) (?:just |only |simply )(?:a|an) (?:\w+ )?(?:person|human|user|customer|seeker)\b",
        # the task or the role spoken of ("You are the person looking for ...", "You are asked to find
        # a movie", "in a role of asking", "Don't end the conversation")
        r"\byou(?:'re| are) (?:the|a) (?:person|one|user|seeker|customer|client) (?:who(?:'s| is)? )?"
        r"(?:looking|asking|seeking|searching|wanting|trying)\b",
        r"\byou(?:'re| are) (?:being )?(?:asked|supposed|instructed|told) to\b",
        r"\b(?:a|the|my|your|this|that) role (?:of|as)\b",
        r"\b(?:my|your|the) (?:assigned )?role\b",
        r"\b(?:don't|do not|never) (?:end|close|stop|leave) the (?:conversation|dialogue|chat)\b",
        # the message spoken of: its versions and wording ("a rewritten version of your answer", "How
        # do I make this message clearer?", '"No thanks" is a good way to say it')
        r"\b(?:rewritten|revised|corrected|improved|edited|updated|shorter|new|better) version of "
        r"(?:the|your|my|this|that) (?:text|answer|response|reply|message)\b",
        r"\b(?:this|the|my|your|that) (?:chat )?(?:message|response|reply|answer|text) "
        r"(?:clearer|shorter|better|more (?:\w+))\b",
        r"\bchat message\b",
        r"\b(?:your|my|the) response to (?:the|this|my|your)\b",
        r"[\"“][^\"”\n]{1,60}[\"”] is (?:a|an|the) (?:\w+ ){0,2}"
        r"(?:way|phrase|reply|response|answer|thing to say)\b",
        r"\b(?:continue|write|reply|respond|answer)\b[^.!?\n]{0,15}\byour own words\b",
        r"\b(?:i'll|i will|i'm going to|i am going to|i shall)(?: now| then| next| also)? "
        r"(?:ask (?:you (?:a|some|about|for|whether|if)\b|about|for|whether|if|them|it|the)|inquire|enquire|"
        r"request (?:the|more|information)|"
        r"mention|respond|reply|answer (?:the|their|its|with)|state|inform|tell (?:them|it|the))\b",
    )
]


def first_cue(text: str, patterns: list[re.Pattern[str]]) -> str | None:
    """The first of `patterns` found in `text` (apostrophes made straight), or None."""
    plain = text.replace("’", "'")
    for pattern in patterns:
        match = pattern.search(plain)
        if match is not None:
            return match.group()
    return None


def meta_text(text: str) -> str | None:
    """The phrase by which `text` is about the message rather than the message (`META_TEXT`), or None."""
    return first_cue(text, META_TEXT)


def crs_role_flip(text: str) -> str | None:
    """The phrase by which a CRS message speaks as the seeker (`CRS_SEEKER_VOICE`), or None."""
    return first_cue(text, CRS_SEEKER_VOICE)
