"""A TF-IDF fit over many documents with numpy, equal to scikit-learn's `TfidfVectorizer` to the bit.

`TfidfVectorizer(stop_words=..., sublinear_tf=True, ngram_range=(1, 2))` counts terms one at a time
in Python (about 60 microseconds per item text of a catalogue, a minute at a million items) and
keeps several copies of the count matrix while it sorts and prunes its vocabulary. `fit_tfidf` gives
the same vocabulary, idf and matrix (same columns, same order of entries within a row, same floating
point results) from word ids and numpy: a document's words are looked up once each, bigrams are pairs
of word ids, and terms are numbered and counted by sorting. The weighting itself is scikit-learn's
own `TfidfTransformer` on the count matrix, as inside `TfidfVectorizer`.

The analysis is the vectorizer's default word analyzer (lower case, the token pattern, stop words
removed, then unigrams and bigrams); `fit_tfidf` refuses a vectorizer configured otherwise.
"""

from __future__ import annotations

import re
from array import array
from collections import defaultdict
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from itertools import islice
from typing import Any

import numpy as np
import numpy.typing as npt
import scipy.sparse as sp
from sklearn.feature_extraction.text import TfidfTransformer, TfidfVectorizer

#: Documents analysed per numpy pass (bounds the transient memory of a pass).
CHUNK = 20_000
#: Bigram term keys: first word id times this plus (second word id + 1); unigrams have 0 there.
_SHIFT = np.int64(1 << 32)


@dataclass
class FittedTfidf:
    """What `TfidfVectorizer.fit_transform` leaves: the vocabulary (term -> column), idf per column
    and the TF-IDF matrix (documents x terms, CSR, unit rows)."""

    vocabulary: dict[str, int]
    idf: npt.NDArray[np.float64]
    matrix: Any


def fit_tfidf(documents: Iterable[str], vectorizer: TfidfVectorizer) -> FittedTfidf:
    """`vectorizer.fit_transform(documents)` (vocabulary, idf and matrix), computed without the
    per-term Python loop. The vectorizer must use the default word analyzer with `ngram_range=(1, 2)`
    and no pruning (`min_df=1`, `max_df=1.0`, no `max_features`)."""
    _check(vectorizer)
    terms = _TermCounts(frozenset(vectorizer.get_stop_words() or ()), re.compile(vectorizer.token_pattern))
    for chunk in _chunks(documents):
        terms.add(chunk)
    if not len(terms.seen_keys):
        raise ValueError("empty vocabulary; perhaps the documents only contain stop words")
    vocabulary, column = terms.columns()
    counted = terms.count_matrix(column)
    transformer = TfidfTransformer(norm=vectorizer.norm, sublinear_tf=vectorizer.sublinear_tf)
    transformer.set_params(use_idf=vectorizer.use_idf, smooth_idf=vectorizer.smooth_idf)
    matrix = transformer.fit(counted).transform(counted, copy=False)
    return FittedTfidf(vocabulary, np.asarray(transformer.idf_, dtype=np.float64), matrix)


class _TermCounts:
    """The terms of the documents read so far, chunk by chunk: word ids (in order of first
    occurrence), term keys and ids, and per chunk the term id and count of each (document, term)
    cell and the cells per document."""

    def __init__(self, stop: frozenset[str], pattern: re.Pattern[str]) -> None:
        self.stop, self.pattern = stop, pattern
        words: dict[str, int] = defaultdict()
        words.default_factory = words.__len__  # type: ignore[attr-defined]  # a new word: the next id
        self.words = words
        self.is_stop = np.zeros(0, dtype=bool)
        self.seen_keys = np.zeros(0, dtype=np.int64)  # term keys seen so far, sorted
        self.seen_ids = np.zeros(0, dtype=np.int64)  # their term ids (order of first occurrence)
        self.indices: list[npt.NDArray[np.int32]] = []  # per chunk: the term id of each entry
        self.counts: list[npt.NDArray[np.int32]] = []
        self.lengths: list[npt.NDArray[np.int64]] = []

    def add(self, chunk: list[str]) -> None:
        """Count the terms of one chunk of documents, numbering the new ones."""
        words, seen_keys, seen_ids = self.words, self.seen_keys, self.seen_ids
        word, doc, grown = _term_stream(chunk, words, self.is_stop, self.pattern)
        if len(grown) > len(self.is_stop):  # the stop words among the new words
            fresh = list(islice(iter(words), len(self.is_stop), None))
            grown[len(self.is_stop) :] = [w in self.stop for w in fresh]
            self.is_stop = grown
        kept = ~self.is_stop[word]
        keys, doc_of = _keys(word[kept], doc[kept], len(chunk))
        unique, first, inverse = np.unique(keys, return_index=True, return_inverse=True)
        at = np.searchsorted(seen_keys, unique)
        known = at < len(seen_keys)
        known[known] = seen_keys[at[known]] == unique[known]
        ids = np.empty(len(unique), dtype=np.int64)
        ids[known] = seen_ids[at[known]]
        new = np.flatnonzero(~known)
        numbered = new[np.argsort(first[new], kind="stable")]  # in order of first occurrence
        ids[numbered] = len(seen_keys) + np.arange(len(numbered))
        self.seen_keys = np.insert(seen_keys, at[new], unique[new])  # both sorted: a merge
        self.seen_ids = np.insert(seen_ids, at[new], ids[new])
        cells, tally = np.unique(doc_of * _SHIFT + ids[inverse], return_counts=True)
        self.indices.append((cells % _SHIFT).astype(np.int32))
        self.counts.append(tally.astype(np.int32))
        self.lengths.append(np.bincount(cells // _SHIFT, minlength=len(chunk)))

    def columns(self) -> tuple[dict[str, int], npt.NDArray[np.int64]]:
        """The vocabulary (term -> column) and the column of each term id: its rank in alphabetical
        order of the term text."""
        keys_by_id = np.empty(len(self.seen_keys), dtype=np.int64)
        keys_by_id[self.seen_ids] = self.seen_keys
        names = list(self.words)
        word_rank = np.empty(len(names), dtype=np.int64)
        word_rank[sorted(range(len(names)), key=names.__getitem__)] = np.arange(len(names))
        first_word, second = keys_by_id // _SHIFT, keys_by_id % _SHIFT
        # "w1" < "w1 w2" < "w1x ...": token characters all sort after the space that joins a bigram, so
        # alphabetical order is the order of (rank of w1, 0 for a unigram else 1 + rank of w2)
        sort_key = word_rank[first_word] * (len(names) + 1) + np.where(
            second > 0, word_rank[second - 1] + 1, 0
        )
        column = np.empty(len(keys_by_id), dtype=np.int64)
        column[np.argsort(sort_key, kind="stable")] = np.arange(len(keys_by_id))
        return _vocabulary(names, first_word, second, column), column

    def count_matrix(self, column: npt.NDArray[np.int64]) -> Any:
        """The documents x terms count matrix (CSR); the per-chunk lists are emptied as it is built."""
        nnz = sum(len(i) for i in self.indices)
        index_type = np.int32 if nnz <= np.iinfo(np.int32).max else np.int64
        indptr = np.zeros(sum(len(n) for n in self.lengths) + 1, dtype=index_type)
        np.cumsum(np.concatenate(self.lengths), out=indptr[1:])
        column = column.astype(index_type)
        columns = np.concatenate([column[chunk] for chunk in self.indices])
        self.indices.clear()
        data = np.concatenate(self.counts).astype(np.float64)
        self.counts.clear()
        return sp.csr_array((data, columns, indptr), shape=(len(indptr) - 1, len(self.seen_keys)))


def _check(vectorizer: TfidfVectorizer) -> None:
    default = TfidfVectorizer()
    same = ("analyzer", "lowercase", "preprocessor", "tokenizer", "strip_accents", "max_features")
    if (
        any(getattr(vectorizer, name) != getattr(default, name) for name in same)
        or tuple(vectorizer.ngram_range) != (1, 2)
        or vectorizer.min_df != 1
        or vectorizer.max_df != 1.0
        or vectorizer.vocabulary is not None
        or vectorizer.binary
    ):
        raise ValueError("fit_tfidf: expected a word-analyzer TfidfVectorizer with ngram_range=(1, 2)")


def _chunks(documents: Iterable[str]) -> Iterator[list[str]]:
    it = iter(documents)
    while chunk := list(islice(it, CHUNK)):
        yield chunk


def _term_stream(
    chunk: list[str], words: dict[str, int], stop: npt.NDArray[np.bool_], pattern: re.Pattern[str]
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], npt.NDArray[np.bool_]]:
    """The term keys of a chunk of documents in the analyzer's order (per document its unigrams,
    then its bigrams) and the document (within the chunk) of each; and which word ids are stop
    words, grown to the words seen so far (every token gets an id; stop words are dropped here)."""
    ids = array("q")  # word ids, 8 bytes a token (the token strings die at once)
    sizes = array("q")
    lookup = words.__getitem__
    for text in chunk:
        found = pattern.findall(text.lower())
        sizes.append(len(found))
        ids.extend(map(lookup, found))
    word = np.frombuffer(ids, dtype=np.int64) if ids else np.zeros(0, dtype=np.int64)
    doc = np.repeat(np.arange(len(chunk), dtype=np.int64), np.frombuffer(sizes, dtype=np.int64))
    if len(stop) < len(words):
        stop = np.concatenate([stop, np.zeros(len(words) - len(stop), dtype=bool)])
    return word, doc, stop


def _keys(
    word: npt.NDArray[np.int64], doc: npt.NDArray[np.int64], documents: int
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]:
    """Unigram and bigram keys of the (stop-word-free) words of a chunk, in the analyzer's order:
    per document its unigrams, then its bigrams; and the document of each."""
    size = np.bincount(doc, minlength=documents)
    start = np.concatenate([[0], np.cumsum(size)[:-1]])
    slots = np.maximum(2 * size - 1, 0)  # n unigrams and n - 1 bigrams
    base = np.concatenate([[0], np.cumsum(slots)[:-1]])
    local = np.arange(len(word)) - start[doc]
    pair = np.flatnonzero(doc[:-1] == doc[1:]) if len(word) > 1 else np.zeros(0, dtype=np.int64)
    keys = np.empty(len(word) + len(pair), dtype=np.int64)
    owner = np.empty(len(keys), dtype=np.int64)
    at = base[doc] + local
    keys[at], owner[at] = word * _SHIFT, doc
    at = base[doc[pair]] + size[doc[pair]] + local[pair]
    keys[at], owner[at] = word[pair] * _SHIFT + word[pair + 1] + 1, doc[pair]
    return keys, owner


def _vocabulary(
    names: list[str],
    first_word: npt.NDArray[np.int64],
    second: npt.NDArray[np.int64],
    column: npt.NDArray[np.int64],
) -> dict[str, int]:
    """Term text -> column, in order of first occurrence (as the vectorizer's dictionary is)."""
    terms = np.empty(len(column), dtype=object)
    single = second == 0
    terms[single] = list(map(names.__getitem__, first_word[single].tolist()))
    pairs = ~single
    terms[pairs] = list(
        map(
            "{} {}".format,
            map(names.__getitem__, first_word[pairs].tolist()),
            map(names.__getitem__, (second[pairs] - 1).tolist()),
        )
    )
    return dict(zip(terms.tolist(), column.tolist(), strict=True))
