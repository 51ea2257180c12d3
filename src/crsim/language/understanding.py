"""Rule-based understanding of user utterances, shared by the built-in CRSs (and usable by HTTP ones).

`understand(text, domain, context)` maps free text onto the conversation contract: dialogue acts
plus typed preferences (liked/disliked slot values, people, periods and topics), item feedback and
inquiries, for any domain. The vocabularies live in `lexicon` (built once per domain from its
items, slots and phrasings), the cue words in `cues`, and intent and feedback rules in `intents`;
the result types in `results`; this module holds the parser that reads slot values.
"""

from __future__ import annotations

from crsim.language import cues
from crsim.language.intents import IntentReader
from crsim.language.lexicon import Lexicon, Person, lexicon_for
from crsim.language.results import Context, Period, Understanding
from crsim.model.domain import Domain
from crsim.model.text import STOPWORDS, normalize, tokenize

__all__ = ["Context", "Lexicon", "Period", "Understanding", "lexicon_for", "understand"]


def understand(text: str, domain: Domain, context: Context | None = None) -> Understanding:
    """Parse one user utterance. Never raises on odd input; only the first 2000 characters are read."""
    return _Parser(text[:2000], domain, context or Context()).run()


class _Parser:
    """One pass over one utterance: items and people first, then slot values, periods and topics."""

    def __init__(self, text: str, domain: Domain, context: Context) -> None:
        self.domain, self.lex, self.ctx, self.text = domain, lexicon_for(domain), context, text
        self.tokens = tokenize(text)
        self.words = [t.text for t in self.tokens]
        self.used = [False] * len(self.words)
        self.norm = " ".join(self.words)
        self.questions: list[str] = []
        self.clause, self.sentences = self._structure()
        self.out = Understanding(text=text)

    def run(self) -> Understanding:
        mentions = self._link_items()
        self._people()
        self._keep_items(mentions)
        for k in range(len(self.words)):
            if not self.used[k]:
                self._slot_values_at(k)
        self._topics()
        IntentReader(self, self.out, self.ctx, self.domain.items, self.lex).apply()
        return self.out

    def _structure(self) -> tuple[list[int], list[str]]:
        """Clause id per token (split at punctuation and 'but'), and the sentences as token strings
        (those that ended with "?" also in `questions`)."""
        clauses, sentences, clause, start = [], [], 0, 0
        self.sentence_of: list[int] = []
        for k, token in enumerate(self.tokens):
            if k > 0:
                between = self.text[self.tokens[k - 1].end : token.start]
                if any(c in ".?!;\n" for c in between) and not _decimal_point(between, self.words, k):
                    sentences.append(" ".join(self.words[start:k]))
                    if "?" in between:
                        self.questions.append(sentences[-1])
                    start = k
                contrast = token.text in cues.CONTRAST
                clause += any(c in ",.;!?:\n" for c in between) or (
                    contrast and self.words[k - 1] != "anything"
                )
            clauses.append(clause)
            self.sentence_of.append(len(sentences))
        sentences.append(" ".join(self.words[start:]))
        if self.tokens and "?" in self.text[self.tokens[-1].end :]:
            self.questions.append(sentences[-1])
        return clauses, sentences

    def _capitalised(self, k: int) -> bool:
        start = self.tokens[k].start
        return start < len(self.text) and self.text[start].isupper()

    def _negated(self, i: int, j: int) -> bool:
        """A negation cue shortly before `words[i:j]` or a dismissive word after it, in one clause."""
        words, clause = self.words, self.clause
        for k in range(i - 1, max(-1, i - 6), -1):
            if clause[k] != clause[i]:
                break
            if words[k] in cues.NEG_BEFORE and words[k + 1] not in cues.NEG_RELEASE:
                return True
            if (words[k] == "no" and k == i - 1) or (words[k] == "but" and words[k - 1 : k] == ["anything"]):
                return True
        for k in range(j, min(len(words), j + 4)):
            if clause[k] != clause[i]:
                break
            if words[k] in cues.NEG_AFTER or (
                words[k] == "not" and words[k + 1 : k + 2] in (["for"], ["my"])
            ):
                return True
        return False

    def _add(self, slot: str, value: str, i: int, j: int) -> None:
        values = (self.out.dislikes if self._negated(i, j) else self.out.likes).setdefault(slot, [])
        if value not in values:
            values.append(value)
        self.used[i:j] = [True] * (j - i)

    # --- items and people ----------------------------------------------------------------------

    def _link_items(self) -> list[tuple[str, int, int]]:
        """Item mentions as (id, start token, end token). Unmarked ones made of genre or topic words
        ("a scary movie", "about time travel") are not taken for titles."""
        found = []
        for mention in self.domain.items.linker.link(self.text):
            span = [k for k, t in enumerate(self.tokens) if t.start >= mention.start and t.end <= mention.end]
            if not span:
                continue
            i, j = span[0], span[-1] + 1
            quoted = mention.start > 0 and self.text[mention.start - 1] in "\"'“‘"
            marked = "(" in mention.surface or quoted or self._capitalised(i)
            words = self.words[i:j]
            if marked or not (words[0] in cues.TOPIC_CUES or any(w in self.lex.value_words for w in words)):
                found.append((mention.item_id, i, j))
        return found

    def _keep_items(self, mentions: list[tuple[str, int, int]]) -> None:
        """Items not overlapping a person's name (unless a year marks them as titles)."""
        for item_id, i, j in mentions:
            if any(self.used[i:j]) and not any(w.isdigit() for w in self.words[i:j]):
                continue
            self.used[i:j] = [True] * (j - i)
            if item_id not in self.out.mentioned_items:
                self.out.mentioned_items.append(item_id)

    def _people(self) -> None:
        k = 0
        while k < len(self.words):
            hit = self.lex.people.match(self.words, self.used, k) or self._single_name(k)
            if hit is None:
                k += 1
                continue
            person, length = hit
            self._add(self._role(person, k, k + length), person.name, k, k + length)
            self._title_after_person(person, k + length)
            k += length

    def _single_name(self, k: int) -> tuple[Person, int] | None:
        """A one-word name ("Madonna") or a unique surname ("Spielberg"); common words need capitals."""
        word, lex = self.words[k], self.lex
        if word in lex.cues.filler or word in STOPWORDS or word in lex.value_words:
            return None
        person = lex.single_names.get(word) or lex.surnames.get(word)
        if person is None:
            return None
        if word in lex.common and not (
            self._capitalised(k) and k > 0 and self.clause[k - 1] == self.clause[k]
        ):
            return None
        return person, 1

    def _role(self, person: Person, i: int, j: int) -> str:
        """Which people slot a name fills: the only one listing it, the one cued by the words before
        it ("directed by"), the one asked for, else the one listing it most (ties: the first)."""
        slots = self.lex.people_slots
        present = [slot for slot, count in zip(slots, person.counts, strict=True) if count]
        if len(present) == 1:
            return present[0]
        before = set(self.words[max(0, i - 4) : i])
        for slot, words in self.lex.cues.people_cues.items():
            if before & words:
                return slot
        after = self.lex.cues.spec.people.title_after
        if after is not None and self.words[j : j + 1] == [after[0]]:
            return after[1]
        if self.ctx.elicited in slots:
            return self.ctx.elicited
        return slots[max(range(len(slots)), key=lambda n: (person.counts[n], -n))]

    def _title_after_person(self, person: Person, j: int) -> None:
        """'tom hanks in big': a lower-case title right after a person counts when the person is in it."""
        after = self.lex.cues.spec.people.title_after
        if after is None or j + 1 >= len(self.words) or self.words[j] != after[0]:
            return
        end = j + 1
        while end < len(self.words) and end - j <= 5 and self.clause[end] == self.clause[j]:
            end += 1
        mention = self.domain.items.linker.match_title(" ".join(self.words[j + 1 : end]))
        item = self.domain.items.get(mention.item_id) if mention and mention.score >= 100 else None
        attribute = self.domain.informable_slots.get(after[1], after[1])
        if item is not None and person.name in (a.lower() for a in item.values(attribute)):
            self.out.mentioned_items.append(item.id)
            self.used[j:end] = [True] * (end - j)

    # --- slot values, periods, keywords, topics ------------------------------------------------

    def _slot_values_at(self, k: int) -> None:
        values = self.lex.values.match(self.words, self.used, k)
        if values is not None:
            for slot, value in self._named(values[0], k, k + values[1]):
                self._add(slot, value, k, k + values[1])
            return
        keyword = self.lex.keywords.match(self.words, self.used, k)
        if keyword is not None:
            self._topic(keyword[0], k, k + keyword[1], self._negated(k, k + keyword[1]))
            return
        word = self.words[k]
        if self.lex.period_slot is not None:
            period = self._period_at(k) if word[:1].isdigit() or word in self.lex.cues.period_words else None
            if period is not None:
                self._add_period(period[0], k, k + period[1])
                return
        if self.lex.numeric_slots and (word.isdigit() or word in cues.NUMBER_WORDS):
            self._number_at(k)

    def _named(self, meanings: tuple[tuple[str, str], ...], i: int, j: int) -> tuple[tuple[str, str], ...]:
        """Of a value several slots share ("free": entrance and price range), the slot whose words are
        nearest to it in the sentence, else the slot just asked for, else every slot."""
        if len({slot for slot, _ in meanings}) < 2:
            return meanings
        words, sentence = self.words, self.sentence_of
        best: dict[str, int] = {}
        for slot, _ in meanings:
            names = self.lex.cues.slot_words.get(slot, frozenset())
            near = [
                abs(at - i) if at < i else at - j + 1
                for at in range(len(words))
                if not i <= at < j and sentence[at] == sentence[i] and words[at] in names
            ]
            if near:
                best[slot] = min(near)
        if best:
            closest = min(best.values())
            return tuple(m for m in meanings if best.get(m[0]) == closest)
        elicited = tuple(m for m in meanings if m[0] == self.ctx.elicited)
        return elicited or meanings

    def _number_at(self, k: int) -> None:
        """A number stating a numeric slot: the slot named nearest to it in the sentence, not across
        another number ("4 stars", "an 8-cylinder car", "the cylinders to be 8", "with 3 as the
        cylinders", "a weight of 2489 lbs"), else the slot just asked for; bounded by the words around
        it ("at least 4 stars" -> ">=4", "under 20 pounds" -> "<20")."""
        number, end = self._number(k)
        written = not self.words[k].isdigit()  # "three": only right next to the slot's word
        slot, slot_at = self._numeric_slot(k, end, 2 if written else 4)
        if slot is None and self.ctx.elicited in self.lex.numeric_slots and not written:
            slot = self.ctx.elicited
        if slot is None:
            return
        start, stop = min(k, slot_at if slot_at is not None else k), max(end, (slot_at or 0) + 1)
        bound, start, stop = self._bound(slot, k, end, start, stop)
        value = f"{cues.BOUND_SIGNS[bound]}{number}" if bound else number
        self._add(slot, value, start, stop)

    def _number(self, k: int) -> tuple[str, int]:
        """The number at token `k` ("2.5" spans three tokens) and the token after it."""
        word = self.words[k]
        if not word.isdigit():
            return cues.NUMBER_WORDS[word], k + 1
        if k + 1 < len(self.words) and self.words[k + 1].isdigit():
            between = self.text[self.tokens[k].end : self.tokens[k + 1].start]
            if between in (".", ","):
                joined = f"{word}.{self.words[k + 1]}" if between == "." else word + self.words[k + 1]
                return joined, k + 2
        return word, k + 1

    def _numeric_slot(self, k: int, end: int, reach: int) -> tuple[str | None, int | None]:
        """The numeric slot named nearest to the number at `words[k:end]` within `reach` tokens in the
        same sentence, after it before before it at one distance; never across another number."""
        words, sentence = self.words, self.sentence_of
        sides = {"after": True, "before": True}
        for distance in range(1, reach + 1):
            for side, at in (("after", end - 1 + distance), ("before", k - distance)):
                if not sides[side] or not 0 <= at < len(words) or sentence[at] != sentence[k]:
                    sides[side] = False
                    continue
                if words[at].isdigit():
                    sides[side] = False
                    continue
                for slot in self.lex.numeric_slots:
                    if words[at] in self.lex.numeric_words[slot]:
                        return slot, at
        return None, None

    def _bound(self, slot: str, k: int, end: int, start: int, stop: int) -> tuple[str | None, int, int]:
        """The bound phrase right before the number or right after it (or after its unit word)."""
        before, after = self.lex.bounds[slot]
        words = self.words
        for key, bound in before.items():
            n = len(key)
            for gap in (0, 1):  # "at least a 4", "under £20"
                if k - n - gap >= 0 and tuple(words[k - n - gap : k - gap]) == key:
                    return bound, min(start, k - n - gap), stop
        unit = words[end : end + 1]
        skip = 1 if unit and unit[0] in self.lex.numeric_words[slot] else 0
        for key, bound in after.items():
            at = end + skip
            if tuple(words[at : at + len(key)]) == key:
                return bound, start, max(stop, at + len(key))
        return None, start, stop

    def _add_period(self, period: Period, i: int, j: int) -> None:
        prev = self.words[i - 1] if i else ""
        spec = self.lex.cues.spec.period
        relative = self.words[i] in spec.relative or prev in spec.degree
        if self.ctx.recommended and relative and period.label in ("recent", "classic"):
            newer = (period.label == "recent") != self._negated(i, j)
            self.out.newer, self.out.older = self.out.newer or newer, self.out.older or not newer
        elif self._negated(i, j):
            self.out.disliked_periods.append(period)
        else:
            self.out.periods.append(period)
        self.used[i:j] = [True] * (j - i)

    def _period_at(self, k: int) -> tuple[Period, int] | None:
        word, lex, spec = self.words[k], self.lex, self.lex.cues.spec.period
        nxt, prev = self.words[k + 1] if k + 1 < len(self.words) else "", self.words[k - 1] if k else ""
        decade = cues.DECADE.fullmatch(word)
        if decade and (decade.group(3) or nxt == "s"):
            century, digit = decade.group(1), int(decade.group(2))
            start = (
                int(century) * 100 + digit * 10 if century else (2000 if digit <= 1 else 1900) + digit * 10
            )
            return Period(f"{start}s", start, start + 9), 1 if decade.group(3) else 2
        if word in spec.decade_words:
            start = spec.decade_words[word]
            return Period(f"{start}s", start, start + 9), 1
        if cues.YEAR.fullmatch(word):
            year = int(word)
            if prev in spec.before:
                return Period(f"before {year}", lex.min_year, year - 1), 1
            if prev in spec.since:
                return Period(f"since {year}", year, lex.max_year), 1
            return Period(word, year, year), 1
        if word in spec.recent or (word == "new" and nxt in spec.new_before):
            return Period("recent", lex.max_year - spec.recent_years, lex.max_year), 1
        if word in spec.classic and prev not in ("year", "years"):
            return Period("classic", lex.min_year, spec.classic_until), 1
        return None

    def _topics(self) -> None:
        """Phrases after 'about', 'involving', 'with'...; other content words become weak free text."""
        words = self.words
        for k, word in enumerate(words):
            if self.used[k] or word not in cues.TOPIC_CUES or words[k - 1 : k] in (["how"], ["what"]):
                continue
            end = k + 1
            while (
                end < len(words)
                and end - k <= 6
                and not self.used[end]
                and self.clause[end] == self.clause[k]
            ):
                if words[end] in cues.TOPIC_STOP:
                    break
                end += 1
            phrase = [w for w in words[k + 1 : end]]
            while phrase and phrase[0] in STOPWORDS:
                phrase.pop(0)
            while phrase and phrase[-1] in STOPWORDS:
                phrase.pop()
            if not [w for w in phrase if w not in self.lex.cues.filler and w not in STOPWORDS]:
                continue
            if word != "with" or not {words[k + 1], phrase[0]} & cues.WITH_SKIP:
                self._topic(" ".join(phrase), k, end, word == "without" or self._negated(k, end))
        self.out.free_words.extend(
            w
            for k, w in enumerate(words)
            if not self.used[k]
            and 2 < len(w) <= 30
            and w not in STOPWORDS
            and w not in self.lex.cues.filler
            and not w.isdigit()
        )

    def _topic(self, phrase: str, i: int, j: int, negated: bool) -> None:
        if self.lex.topic_slot is not None:
            (self.out.dislikes if negated else self.out.likes).setdefault(self.lex.topic_slot, []).append(
                phrase
            )
        words = [w for w in normalize(phrase).split() if w not in STOPWORDS]
        (self.out.disliked_topic_words if negated else self.out.topic_words).extend(words)
        self.used[i:j] = [True] * (j - i)


def _decimal_point(between: str, words: list[str], k: int) -> bool:
    """Whether the text between tokens `k - 1` and `k` is the point of a decimal number ("2.5")."""
    return between == "." and words[k - 1].isdigit() and words[k].isdigit()
