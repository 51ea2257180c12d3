"""Train the `learned_crsarena` evaluator on all of CRSArena-Eval and write its JSON model.

    python scripts/train_crsarena.py                  # the gold copy shipped in src/crsim/studies/meta/data
    python scripts/train_crsarena.py \
        --gold ../shared/datasets/crsarena_eval/informagi_face/crs_arena_eval.json

Fits the turn heads, the dialogue heads and the combiner on all 467 conversations (settings
chosen by inner grouped 5-fold CV, seed 0; see `crsim.eval.learned.crsarena_model`) and writes
`src/crsim/eval/learned/models/crsarena-v2.json`. Deterministic: re-running on the same data, library
versions and machine (CPU kernel, thread count) writes the same bytes; elsewhere only rounding
differs (docs/meta-evaluation.md). The validation numbers are not computed here; they come
from `crsim meta-eval --evaluator learned_crsarena --protocol both` (docs/meta-evaluation.md).
"""

from __future__ import annotations

import argparse
import time
from importlib.metadata import version
from pathlib import Path

from crsim.eval.learned.crsarena_model import save_model
from crsim.studies.fitting.crsarena_fit import FitSettings, fit_model
from crsim.studies.meta.gold import load_gold
from crsim.studies.meta.learned import labelled

ROOT = Path(__file__).resolve().parents[1]
OUT = ROOT / "src" / "crsim" / "eval" / "learned" / "models" / "crsarena-v2.json"
DESCRIPTION = (
    "CRSArena-Eval's seven aspects (relevance and interestingness per CRS turn; understanding, task"
    " completion, interest arousal, efficiency and overall impression per dialogue) predicted by"
    " ridge regressions over TF-IDF and dense features, the dialogue heads stacked on the turn heads."
    " Trained on movie-domain conversations between crowd workers and nine CRSs."
)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--gold", type=Path, default=None, help="CRSArena-Eval JSON (default: the shipped copy)."
    )
    parser.add_argument(
        "--out", type=Path, default=OUT, help=f"Where to write the model (default: {OUT.name})."
    )
    args = parser.parse_args()
    started = time.perf_counter()
    gold = load_gold(args.gold, link_items=True)
    data = [labelled(c) for c in gold]
    settings = FitSettings()
    model = fit_model(
        data,
        settings,
        name="crsarena-v2",
        description=DESCRIPTION,
        training_description=(
            "CRSArena-Eval (informagi/face, dataset/crs_arena_eval.json): 467 crowd conversations with"
            " nine CRSs (movie domain), aggregated human labels; titles linked to crsim's movie domain"
        ),
    )
    model = model.model_copy(update={"software": {p: version(p) for p in ("numpy", "scipy", "scikit-learn")}})
    save_model(model, args.out)
    size = args.out.stat().st_size / 1e6
    print(f"{len(data)} conversations, {model.training.turns} CRS turns; wrote {args.out} ({size:.1f} MB)")
    for level, part in (("turn", model.turn), ("dialogue", model.dialogue), ("combiner", model.combiner)):
        for aspect, head in part.heads.items():
            inner = "–" if head.inner_pearson is None else f"{head.inner_pearson:.3f}"
            chosen = f"alpha {head.alpha:g}, text weight {head.text_weight:g}"
            print(f"{level:9} {aspect:17} {chosen}, inner r {inner}")
    print(f"{time.perf_counter() - started:.1f} s")


if __name__ == "__main__":
    main()
