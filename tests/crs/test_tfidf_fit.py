"""`fit_tfidf` gives what scikit-learn's `TfidfVectorizer.fit_transform` gives, to the bit: the same
vocabulary (in the same order), idf and matrix (columns, order of entries within a row, values), on
the shipped domains' item texts (as the `retrieval` CRS's text index reads them) and on odd text."""

from __future__ import annotations

import numpy as np
import pytest
from sklearn.feature_extraction.text import TfidfVectorizer

from crsim.crs.retrieval import TextIndex, _item_texts, _vectorizer
from crsim.crs.tfidf import fit_tfidf
from crsim.domains import domain_named

ODD = [
    "The the THE",
    "",
    "a b c",
    "Ünïcode wörds ärë fine 123 45 a1 _x_ __ ab-cd ab_cd",
    "don't stop believing, don't stop",
    "bar bar bar bar bar",
    "ab abc ab_c ab c abd zz zz ab",
    "x" * 300,
    "tab\tseparated\nlines\r\nand  spaces",
]


def _same(documents: list[str], vectorizer: TfidfVectorizer) -> None:
    expected = vectorizer.fit_transform(documents)
    fitted = fit_tfidf(documents, vectorizer)
    assert list(fitted.vocabulary.items()) == list(vectorizer.vocabulary_.items())
    assert np.array_equal(fitted.idf, vectorizer.idf_)
    assert type(fitted.matrix) is type(expected) and fitted.matrix.shape == expected.shape
    for part in ("indptr", "indices", "data"):
        assert np.array_equal(getattr(fitted.matrix, part), getattr(expected, part)), part


@pytest.mark.parametrize("name", ["movies", "restaurants", "hotels"])
def test_the_shipped_domains_item_texts(name: str) -> None:
    _same(list(_item_texts(domain_named(name))), _vectorizer())


def test_odd_text_and_small_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    import crsim.crs.tfidf as tfidf

    monkeypatch.setattr(tfidf, "CHUNK", 2)  # terms first seen in later chunks are numbered alike
    _same(ODD * 3, _vectorizer())
    _same(ODD, TfidfVectorizer(stop_words=["bar", "stop"], sublinear_tf=True, ngram_range=(1, 2)))
    _same(ODD, TfidfVectorizer(ngram_range=(1, 2)))


def test_only_stop_words_is_refused_as_scikit_learn_does() -> None:
    with pytest.raises(ValueError, match="empty vocabulary"):
        fit_tfidf(["the and of", ""], _vectorizer())


def test_other_settings_are_refused() -> None:
    with pytest.raises(ValueError, match="ngram_range"):
        fit_tfidf(["a text"], TfidfVectorizer(ngram_range=(1, 3)))
    with pytest.raises(ValueError, match="ngram_range"):
        fit_tfidf(["a text"], TfidfVectorizer(ngram_range=(1, 2), min_df=2))


def test_the_text_index_reads_items_as_before() -> None:
    """The columnar item texts are the items' own `_item_words` joined."""
    from crsim.crs.retrieval import _item_words

    for name in ("movies", "restaurants"):
        domain = domain_named(name)
        assert list(_item_texts(domain)) == [" ".join(_item_words(domain, i)) for i in domain.items]
        index = TextIndex(domain)
        assert index.size == len(domain.items) and index.rows.shape[0] == len(domain.items)
