"""Variants of the `learned_crsarena` evaluator, each measured under the same outer folds (issue 22).

    python scripts/crsarena_variants.py                      # every variant, both protocols
    python scripts/crsarena_variants.py --variants base,sysinner --protocols loso

For each protocol (`cv5`: grouped 5-fold CV, seed 0; `loso`: leave one system out; the folds of
`crsim.studies.meta.learned.protocol_folds`, identical for every variant) and each outer fold, the turn
level is fitted once on the training part (cached under `--cache`, keyed by protocol, fold and
turn variant) and every dialogue-level variant is fitted on the same training part, with all of
its settings chosen inside that part. The held-out predictions are pooled, paired with the human
labels by `crsim.studies.meta.meta_evaluate` and ranked by `crsim.studies.meta.rank_systems`, exactly as
`crsim meta-eval --evaluator learned_crsarena --protocol ...` does; the `base` variant reproduces
that command's numbers. Prints one Markdown row per variant and protocol and writes all cells to
`--out` (JSON); `--table FILES` prints the stored rows again, `--paired A,B` a bootstrap interval
of B's overall r minus A's. The `cosine` variant encodes every utterance once with
all-MiniLM-L6-v2 (the `embeddings` extra) and caches the vectors; `aux_satisfied` reads
CRSArena-Dial (`--dial`, default `../shared/datasets/crsarena_dial/data`).

Cost: the turn level dominates (one fit per outer fold and turn variant, 14 per variant with its
own turn level); several processes (`--reverse`) can fill the cache together. Set
OPENBLAS_NUM_THREADS=1 on a shared machine: with two BLAS threads per process a fold took up to
four times longer there.
"""

from __future__ import annotations

import argparse
import json
import pickle
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from functools import partial
from pathlib import Path
from typing import Any

import numpy as np

from crsim.eval.learned.crsarena_features import DIALOGUE_FEATURES, DIALOGUE_TEXTS, TURN_FEATURES, TURN_TEXTS
from crsim.eval.learned.crsarena_model import (
    COMBINER_FEATURES,
    DIALOGUE_ASPECTS,
    RANGES,
    STACK_FEATURES,
    TURN_ASPECTS,
    FloatArray,
    combiner_inputs,
    dialogue_arrays,
    stack_features,
    turn_arrays,
)
from crsim.studies.fitting.crsarena_fit import FitSettings, LabelledDialogue, fit_level, turn_labels
from crsim.studies.meta import load_gold, meta_evaluate, rank_systems
from crsim.studies.meta.gold import GoldSet
from crsim.studies.meta.learned import labelled, protocol_folds
from crsim.studies.meta.predictions import Predictions

ROOT = Path(__file__).resolve().parents[1]
REVERSE = False
SPLITS = ("redial", "opendialkg")


@dataclass
class Part:
    """One outer fold's training or test part: its dialogues, groups and systems."""

    items: list[LabelledDialogue]
    conv_ids: list[str]
    systems: list[str]


@dataclass
class TurnStage:
    """The turn level fitted on a training part: inner out-of-fold values (train) and test values."""

    inner: dict[str, FloatArray]
    test: dict[str, FloatArray]


def _inner_groups(part: Part, by_system: bool, folds: int = 5) -> tuple[list[str], int]:
    """Groups and number of inner folds: conversations in `folds` folds, or one fold per system."""
    if by_system:
        return part.systems, len(set(part.systems))
    return part.conv_ids, folds


#: Feature groups added in the second round (features version 2), by level; variants leave them out
#: to measure each group under the same folds.
GROUPS: dict[str, tuple[tuple[str, ...], tuple[str, ...]]] = {
    "disfluency": (
        ("stutter", "repeated_trigrams", "question_unanswered"),
        (
            "stutter_mean",
            "stutter_max",
            "disfluent_share",
            "repeated_trigrams_mean",
            "unanswered_question_share",
        ),
    ),
    "fit": (
        ("fit_known", "fit_match", "fit_clash", "fit_seen"),
        ("fit_known_share", "fit_match_mean", "fit_clash_mean", "fit_seen_mean"),
    ),
    "offtopic": (
        ("request_unmet", "pleasantry_unprompted"),
        ("request_unmet_share", "pleasantry_unprompted_share"),
    ),
}


def _dropped(groups: tuple[str, ...], level: int) -> tuple[str, ...]:
    return tuple(name for group in groups for name in GROUPS[group][level])


@dataclass(frozen=True)
class TurnVariant:
    """How the turn level is fitted: text blocks left empty, dense features left out, grids."""

    texts_dropped: tuple[str, ...] = ()
    groups_dropped: tuple[str, ...] = ()
    wide: bool = False  # the `WIDE` grids (below) instead of the shipped turn grids


#: Turn-level variants ("conv": the shipped turn level).
TURN_VARIANTS: dict[str, TurnVariant] = {
    "conv": TurnVariant(),
    "nocrs": TurnVariant(texts_dropped=("crs",)),
    "wide": TurnVariant(wide=True),
    "v1": TurnVariant(groups_dropped=("disfluency", "fit", "offtopic")),
    "disfluency": TurnVariant(groups_dropped=("fit", "offtopic")),
    "disfluency_fit": TurnVariant(groups_dropped=("offtopic",)),
}


def _keep(names: tuple[str, ...], dropped: tuple[str, ...]) -> np.ndarray:
    return np.asarray([n not in dropped for n in names], dtype=bool)


def _turn_texts(items: Sequence[LabelledDialogue], variant: TurnVariant) -> tuple[list[Any], FloatArray]:
    texts, dense = turn_arrays([i.features for i in items])
    drop = variant.texts_dropped
    kept = [tuple(() if n in drop else t for n, t in zip(TURN_TEXTS, row, strict=True)) for row in texts]
    return kept, dense[:, _keep(TURN_FEATURES, _dropped(variant.groups_dropped, 0))]


def fit_turns(train: Part, test: Part, settings: FitSettings, turn_variant: str) -> TurnStage:
    variant = TURN_VARIANTS[turn_variant]
    settings = replace(WIDE, inner_folds=settings.inner_folds) if variant.wide else settings
    names = tuple(n for n in TURN_FEATURES if n not in _dropped(variant.groups_dropped, 0))
    texts, dense = _turn_texts(train.items, variant)
    row_groups = [g for g, item in zip(train.conv_ids, train.items, strict=True) for _ in item.features.turns]
    fit = fit_level(
        texts, dense, turn_labels(train.items), row_groups, TURN_ASPECTS, TURN_TEXTS, names, settings
    )
    t_texts, t_dense = _turn_texts(test.items, variant)
    return TurnStage(fit.inner, fit.model.predict(t_texts, t_dense))


def dialogue_labels(items: Sequence[LabelledDialogue]) -> FloatArray:
    return np.asarray(
        [[float(i.dialogue_labels.get(a, np.nan)) for a in DIALOGUE_ASPECTS] for i in items], dtype=np.float64
    ).reshape(len(items), len(DIALOGUE_ASPECTS))


# --- dialogue-level variants ----------------------------------------------------------------------


@dataclass(frozen=True)
class DialogueVariant:
    """How the dialogue heads and the combiner are fitted."""

    settings: FitSettings | None = None  # None: the settings of the run (`run_variant`)
    by_system: bool = False
    texts: tuple[str, ...] = DIALOGUE_TEXTS  # text blocks kept (others emptied)
    combiner: bool = True
    aux: bool = False  # CRSArena-Dial satisfied/frustrated as an auxiliary stacked head
    cosine: bool = False  # all-MiniLM-L6-v2 cosine features of the dialogue (needs torch at inference)
    groups_dropped: tuple[str, ...] = ()  # feature groups (`GROUPS`) left out at the dialogue level


def _texts(items: Sequence[LabelledDialogue], keep: tuple[str, ...]) -> list[tuple[tuple[str, ...], ...]]:
    texts, _ = dialogue_arrays([i.features for i in items], np.zeros((len(items), len(STACK_FEATURES))))
    return [
        tuple(t if name in keep else () for name, t in zip(DIALOGUE_TEXTS, row, strict=True)) for row in texts
    ]


def fit_dialogue(
    variant: DialogueVariant,
    train: Part,
    test: Part,
    turns: TurnStage,
    aux: dict[str, float],
    base: FitSettings,
) -> dict[str, FloatArray]:
    """Unclipped test predictions of the dialogue aspects."""
    tr_items = [i.features for i in train.items]
    te_items = [i.features for i in test.items]
    tr_stack = stack_features(tr_items, turns.inner)
    te_stack = stack_features(te_items, turns.test)
    _, tr_dense = dialogue_arrays(tr_items, tr_stack)
    _, te_dense = dialogue_arrays(te_items, te_stack)
    tr_texts, te_texts = _texts(train.items, variant.texts), _texts(test.items, variant.texts)
    labels = dialogue_labels(train.items)
    aspects, names = DIALOGUE_ASPECTS, (*DIALOGUE_FEATURES, *STACK_FEATURES)
    keep = _keep(names, _dropped(variant.groups_dropped, 1))
    tr_dense, te_dense = tr_dense[:, keep], te_dense[:, keep]
    names = tuple(n for n, k in zip(names, keep, strict=True) if k)
    if variant.cosine:
        tr_dense = np.hstack([tr_dense, np.asarray([COSINES[c] for c in train.conv_ids])])
        te_dense = np.hstack([te_dense, np.asarray([COSINES[c] for c in test.conv_ids])])
        names = (*names, *COSINE_FEATURES)
    groups, k = _inner_groups(train, variant.by_system)
    chosen = (variant.settings or base).dialogue_level()
    settings = replace(chosen, inner_folds=k if variant.by_system else base.inner_folds)
    if variant.aux:
        if not aux:
            raise SystemExit("aux_satisfied needs CRSArena-Dial's labels: give --dial FOLDER")
        sat = np.asarray([aux.get(c, np.nan) for c in train.conv_ids])
        labels = np.column_stack([labels, sat])
        aspects = (*aspects, "satisfied")
    fit = fit_level(tr_texts, tr_dense, labels, groups, aspects, DIALOGUE_TEXTS, names, settings)
    first_test = fit.model.predict(te_texts, te_dense)
    if not variant.combiner:
        return {a: first_test[a] for a in DIALOGUE_ASPECTS}
    tr_comb = combiner_inputs(fit.inner, tr_stack)
    te_comb = combiner_inputs(first_test, te_stack)
    comb_names: tuple[str, ...] = COMBINER_FEATURES
    if variant.aux:
        tr_comb = np.column_stack([tr_comb, fit.inner["satisfied"]])
        te_comb = np.column_stack([te_comb, first_test["satisfied"]])
        comb_names = (*comb_names, "head_satisfied")
    combiner = fit_level(
        [()] * len(train.items),
        tr_comb,
        dialogue_labels(train.items),
        groups,
        DIALOGUE_ASPECTS,
        (),
        comb_names,
        replace(settings, text_weights=settings.text_weights[:1]),
    )
    return combiner.model.predict([()] * len(test.items), te_comb)


COSINE_FEATURES = (
    "cos_reply_request_mean",
    "cos_reply_request_min",
    "cos_reply_earlier_max_mean",
    "cos_reply_next_mean",
)
#: conv_id -> cosine features (filled by `cosine_features` when a variant asks for them).
COSINES: dict[str, tuple[float, ...]] = {}


def cosine_features(gold: GoldSet, cache: Path) -> dict[str, tuple[float, ...]]:
    """Per dialogue: how close (all-MiniLM-L6-v2 cosine) CRS replies are to the request before them,
    to the user's next utterance, and to the closest earlier CRS reply (a repetition measure)."""
    from crsim.crs.candidates import embedding_model

    path = cache / "embeddings.npz"
    texts = sorted({u.text for c in gold for u in c.dialogue.utterances})
    if path.exists():
        stored = np.load(path, allow_pickle=False)
        vectors = dict(zip(stored["texts"].tolist(), stored["vectors"], strict=True))
    else:
        encoded = embedding_model().encode(texts, batch_size=64, normalize_embeddings=True)
        vectors = dict(zip(texts, np.asarray(encoded), strict=True))
        cache.mkdir(parents=True, exist_ok=True)
        np.savez(path, texts=np.asarray(texts), vectors=np.asarray(encoded))
    out: dict[str, tuple[float, ...]] = {}
    for conversation in gold:
        utterances = list(conversation.dialogue.utterances)
        request, nxt, earlier = [], [], []
        crs_seen: list[np.ndarray] = []
        for i, u in enumerate(utterances):
            if u.role != "crs":
                continue
            v = vectors[u.text]
            if i > 0:
                request.append(float(v @ vectors[utterances[i - 1].text]))
            if i + 1 < len(utterances):
                nxt.append(float(v @ vectors[utterances[i + 1].text]))
            earlier.append(max((float(v @ w) for w in crs_seen), default=0.0))
            crs_seen.append(v)
        out[conversation.conv_id] = (
            float(np.mean(request)) if request else 0.0,
            float(np.min(request)) if request else 0.0,
            float(np.mean(earlier)) if earlier else 0.0,
            float(np.mean(nxt)) if nxt else 0.0,
        )
    return out


#: The wide grids at both levels (the dialogue level's shipped grids, also for the turn level).
WIDE = FitSettings(alphas=FitSettings().dialogue_alphas, text_weights=FitSettings().dialogue_text_weights)
#: The turn level's grids at the dialogue level too (what was shipped with features version 1).
NARROW = FitSettings(dialogue_alphas=FitSettings().alphas, dialogue_text_weights=FitSettings().text_weights)
#: Still wider dialogue grids: the full-data fit of version 2 chose text weight 16, the top of the grid.
WIDER = FitSettings(
    dialogue_alphas=(30000.0, *FitSettings().dialogue_alphas),
    dialogue_text_weights=(*FitSettings().dialogue_text_weights, 32.0, 64.0),
)
_NEW = ("disfluency", "fit", "offtopic")
#: name -> (turn variant (`TURN_VARIANTS`), dialogue variant), or an ensemble of two names.
VARIANTS: dict[str, tuple[str, DialogueVariant] | tuple[str, str]] = {
    "base": ("conv", DialogueVariant()),
    "features_v1": ("v1", DialogueVariant(settings=NARROW, groups_dropped=_NEW)),
    "features_v1_wide": ("v1", DialogueVariant(groups_dropped=_NEW)),
    "disfluency": ("disfluency", DialogueVariant(settings=NARROW, groups_dropped=("fit", "offtopic"))),
    "disfluency_fit": ("disfluency_fit", DialogueVariant(settings=NARROW, groups_dropped=("offtopic",))),
    "narrow_dialogue_grid": ("conv", DialogueVariant(settings=NARROW)),
    "wider_dialogue_grid": ("conv", DialogueVariant(settings=WIDER)),
    "user_text_only": ("conv", DialogueVariant(texts=("user",))),
    "no_dialogue_text": ("conv", DialogueVariant(texts=())),
    "no_combiner": ("conv", DialogueVariant(combiner=False)),
    "aux_satisfied": ("conv", DialogueVariant(aux=True)),
    "sysinner_dialogue": ("conv", DialogueVariant(by_system=True)),
    "cosine": ("conv", DialogueVariant(cosine=True)),
    "ens_base_sysinner_dialogue": ("base", "sysinner_dialogue"),
    "turn_no_crs_text": ("nocrs", DialogueVariant()),
    "wide_both_levels": ("wide", DialogueVariant()),
    "ens_base_turn_no_crs_text": ("base", "turn_no_crs_text"),
}


# --- running ---------------------------------------------------------------------------------------


def _part(data: list[LabelledDialogue], gold: GoldSet, rows: np.ndarray) -> Part:
    conversations = list(gold)
    return Part(
        [data[i] for i in rows.tolist()],
        [conversations[i].conv_id for i in rows.tolist()],
        [conversations[i].crs for i in rows.tolist()],
    )


def _cached_turns(cache: Path, key: str, make: Callable[[], TurnStage]) -> TurnStage:
    path = cache / f"{key}.pkl"
    if path.exists():
        with path.open("rb") as handle:
            stage: TurnStage = pickle.load(handle)
        return stage
    stage = make()
    cache.mkdir(parents=True, exist_ok=True)
    with path.open("wb") as handle:
        pickle.dump(stage, handle)
    return stage


def _clip(aspect: str, values: FloatArray) -> FloatArray:
    low, high = RANGES[aspect]
    return np.clip(values, low, high)


def run_variant(
    name: str,
    protocol: str,
    gold: GoldSet,
    data: list[LabelledDialogue],
    aux: dict[str, float],
    cache: Path,
    settings: FitSettings | None = None,
) -> Predictions:
    """Pooled out-of-fold predictions of one variant under one protocol (`settings`: the shipped ones)."""
    settings = settings or FitSettings()
    spec = VARIANTS[name]
    if isinstance(spec[1], str):
        first = run_variant(spec[0], protocol, gold, data, aux, cache, settings)
        second = run_variant(spec[1], protocol, gold, data, aux, cache, settings)
        return _average(first, second, name)
    turn_variant, variant = spec
    out = Predictions(source=f"{name} ({protocol})")
    folds = protocol_folds(gold, protocol)  # type: ignore[arg-type]
    for fold in reversed(folds) if REVERSE else folds:
        train, test = _part(data, gold, fold.train), _part(data, gold, fold.test)
        key = f"{protocol}-{fold.name.replace(' ', '')}-{turn_variant}"
        turns = _cached_turns(cache, key, partial(fit_turns, train, test, settings, turn_variant))
        dialogue = fit_dialogue(variant, train, test, turns, aux, settings)
        _add(out, test, turns, dialogue)
    return out


def _add(out: Predictions, test: Part, turns: TurnStage, dialogue: dict[str, FloatArray]) -> None:
    row = 0
    for index, (item, conv_id) in enumerate(zip(test.items, test.conv_ids, strict=True)):
        for turn in item.features.turns:
            for aspect in TURN_ASPECTS:
                out.add((conv_id, turn.position, aspect), float(_clip(aspect, turns.test[aspect][row])))
            row += 1
        for aspect in DIALOGUE_ASPECTS:
            out.add((conv_id, None, aspect), float(_clip(aspect, dialogue[aspect][index : index + 1])[0]))


def _average(first: Predictions, second: Predictions, name: str) -> Predictions:
    out = Predictions(source=name)
    for key, value in first.values.items():
        other = second.values[key]
        assert value is not None and other is not None
        out.add(key, (value + other) / 2)
    return out


def summary(gold: GoldSet, predictions: Predictions) -> dict[str, Any]:
    result = meta_evaluate(gold, predictions, predictions.source)
    ranking = rank_systems(gold, predictions, "overall")
    cells = {f"{c.split}/{c.aspect}": [c.pearson, c.spearman, c.n, c.missing] for c in result.cells}
    ranks = {r.scope: {"tau_mean": r.mean.kendall, "tau_bt": r.bradley_terry.kendall} for r in ranking}
    systems = {
        row.system: [row.human_mean, row.evaluator_mean, row.human_rank, row.evaluator_rank]
        for r in ranking
        if r.scope == "all"
        for row in r.systems
    }
    return {"cells": cells, "ranking": ranks, "systems": systems}


def _row(name: str, protocol: str, s: dict[str, Any]) -> str:
    cells = s["cells"]
    parts = []
    for split in SPLITS:
        parts.append(
            " / ".join(f"{cells[f'{split}/{a}'][0]:.3f}" for a in (*TURN_ASPECTS, *DIALOGUE_ASPECTS))
        )
    rank = s["ranking"]["all"]
    return (
        f"| {name} | {protocol} | {parts[0]} | {parts[1]} | {rank['tau_mean']:.3f} / {rank['tau_bt']:.3f} |"
    )


def satisfied_labels(dial: Path | None) -> dict[str, float]:
    """CRSArena-Dial's satisfied (1) / frustrated (0) by conversation id, or {} without the file."""
    if dial is None:
        return {}
    out: dict[str, float] = {}
    for path in sorted(dial.glob("crs_arena_dial_*.json")):
        for record in json.loads(path.read_text()):
            sentiment = record["metadata"]["sentiment"]
            out[record["conversation ID"]] = 1.0 if sentiment == "satisfied" else 0.0
    return out


def print_table(paths: Sequence[Path]) -> None:
    """The Markdown rows of stored results, protocol by protocol, variants in `VARIANTS` order."""
    stored: dict[str, Any] = {}
    for path in paths:
        stored.update(json.loads(path.read_text()))
    for protocol in ("cv5", "loso"):
        for name in VARIANTS:
            if f"{name}/{protocol}" in stored:
                print(_row(name, protocol, stored[f"{name}/{protocol}"]))


def paired_bootstrap(
    gold: GoldSet, first: Predictions, second: Predictions, replicates: int = 2000, seed: int = 0
) -> dict[str, tuple[float, float, float]]:
    """Per split: overall r of `second` minus that of `first`, and its 95% percentile interval over
    conversations resampled with replacement (the same resample for both; seed fixed)."""
    rng = np.random.default_rng(seed)
    out = {}
    for split in SPLITS:
        conversations = gold.split(split)
        y = np.asarray([c.dialogue_labels["overall"] for c in conversations], dtype=np.float64)
        a = np.asarray([first.values[(c.conv_id, None, "overall")] for c in conversations], dtype=np.float64)
        b = np.asarray([second.values[(c.conv_id, None, "overall")] for c in conversations], dtype=np.float64)
        delta = np.corrcoef(b, y)[0, 1] - np.corrcoef(a, y)[0, 1]
        draws = []
        for _ in range(replicates):
            rows = rng.integers(0, len(y), len(y))
            draws.append(np.corrcoef(b[rows], y[rows])[0, 1] - np.corrcoef(a[rows], y[rows])[0, 1])
        low, high = np.percentile(draws, [2.5, 97.5])
        out[split] = (float(delta), float(low), float(high))
    return out


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--protocols", default="cv5,loso")
    parser.add_argument(
        "--reverse",
        action="store_true",
        help="Outer folds in reverse order (a second process can fill the cache).",
    )
    parser.add_argument("--cache", type=Path, default=ROOT / "runs" / "crsarena_variants")
    parser.add_argument(
        "--dial", type=Path, default=ROOT.parent / "shared" / "datasets" / "crsarena_dial" / "data"
    )
    parser.add_argument("--out", type=Path, default=ROOT / "runs" / "crsarena_variants" / "results.json")
    parser.add_argument("--paired", help="A,B: bootstrap interval of B's overall r minus A's, per split.")
    parser.add_argument(
        "--table", nargs="*", type=Path, help="Only print the Markdown rows stored in these result files."
    )
    args = parser.parse_args()
    if args.paired:
        first_name, second_name = args.paired.split(",")
        gold = load_gold(None, link_items=True)
        data = [labelled(c) for c in gold]
        aux = satisfied_labels(args.dial if args.dial.exists() else None)
        for protocol in args.protocols.split(","):
            first = run_variant(first_name, protocol, gold, data, aux, args.cache)
            second = run_variant(second_name, protocol, gold, data, aux, args.cache)
            for split, (delta, low, high) in paired_bootstrap(gold, first, second).items():
                interval = f"[{low:+.3f}, {high:+.3f}]"
                print(f"{second_name} - {first_name}, {protocol}, {split}: overall r {delta:+.3f} {interval}")
        return
    if args.table is not None:
        print_table(args.table)
        return
    global REVERSE
    REVERSE = args.reverse
    gold = load_gold(None, link_items=True)
    data = [labelled(c) for c in gold]
    aux = satisfied_labels(args.dial if args.dial.exists() else None)
    wanted = [VARIANTS[n][1] for n in args.variants.split(",")]
    if any(isinstance(v, DialogueVariant) and v.cosine for v in wanted):
        COSINES.update(cosine_features(gold, args.cache))
    results: dict[str, Any] = json.loads(args.out.read_text()) if args.out.exists() else {}
    for protocol in args.protocols.split(","):
        for name in args.variants.split(","):
            started = time.perf_counter()
            predictions = run_variant(name, protocol, gold, data, aux, args.cache)
            results[f"{name}/{protocol}"] = summary(gold, predictions)
            print(
                _row(name, protocol, results[f"{name}/{protocol}"]), f"{time.perf_counter() - started:.0f} s"
            )
            sys.stdout.flush()
            args.out.parent.mkdir(parents=True, exist_ok=True)
            args.out.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
