"""Train crsim's user-satisfaction evaluator on CRSArena and validate it.

    python scripts/train_satisfaction.py                       # data from tests/fixtures
    python scripts/train_satisfaction.py --dial ../shared/datasets/crsarena_dial \\
        --eval ../shared/datasets/crsarena_eval/informagi_face/crs_arena_eval.json
    python scripts/train_satisfaction.py --ablation            # also compare feature sets (minutes)

Runs grouped 5-fold CV and leave-one-system-out CV (regularisation chosen inside each training
fold), prints the validation table, fits the final heads on all data and writes
`src/crsim/eval/learned/models/satisfaction-v1.json` (the artifact) and
`satisfaction-v1.validation.json` (all validation numbers) next to it. Seeded and solved without
iterative tolerances that matter: re-running on the same data and machine writes identical files;
another CPU or BLAS kernel changes only the last digits of some numbers (docs/satisfaction.md).
With --ablation it validates other feature sets too (with
--embeddings, sentence-embedding sets; needs the `embeddings` extra) and writes no artifact.
"""

from __future__ import annotations

import argparse
import json
import time
from pathlib import Path

from crsim.core.errors import CrsimError
from crsim.eval.learned.artifact import save_artifact
from crsim.studies.fitting.ablation import ablation
from crsim.studies.fitting.reports import ValidationReport
from crsim.studies.fitting.specs import PROTOCOLS, SPLITS, TrainingConfig
from crsim.studies.fitting.training import TrainingResult, load_sets, train
from crsim.studies.fitting.validation import BinaryReport, CorrelationReport

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "tests" / "fixtures"
OUT = ROOT / "src" / "crsim" / "eval" / "learned" / "models" / "satisfaction-v1.json"


def relative(path: Path) -> str:
    """A path as recorded in the artifact: relative to the repository when inside it (reproducible)."""
    resolved = path.resolve()
    return str(resolved.relative_to(ROOT)) if resolved.is_relative_to(ROOT) else str(path)


def number(value: float | None) -> str:
    return "–" if value is None else f"{value:.3f}"


def print_report(report: ValidationReport) -> None:
    """The validation numbers as plain-text tables (95% bootstrap intervals over conversations)."""
    print("\nSentiment (CRSArena-Dial): P(satisfied) out of fold")
    header = "".join(f"{c:23}" for c in ("ROC AUC", "within-CRS AUC", "bal. acc.", "accuracy"))
    print(f"{'protocol':22} {'split':11} {'n':>4} {'sat.':>4}  {header}{'majority':>8}  Brier")
    for protocol, split, s in _binary_rows(report):
        print(
            f"{protocol:22} {split:11} {s.n:4d} {s.positives:4d}  {s.roc_auc.text():22} "
            f"{s.within_crs_roc_auc.text():22} {s.balanced_accuracy.text():22} {s.accuracy.text():22} "
            f"{s.majority_accuracy:8.3f}  {s.brier.text()}"
        )
    print("\nOverall impression 0-4 (CRSArena-Eval): correlation of out-of-fold predictions")
    header = "".join(f"{c:23}" for c in ("r", "rho", "within-CRS r"))
    print(f"{'protocol':22} {'split':11} {'predictor':10} {'n':>4}  {header}")
    for protocol, split, predictor, c in _correlation_rows(report):
        print(
            f"{protocol:22} {split:11} {predictor:10} {c.n:4d}  {c.pearson.text():22} {c.spearman.text():22} "
            f"{c.within_crs_pearson.text()}"
        )
    print("\nSystem level (9 CRSs): correlation of per-system mean prediction with the human mean")
    for protocol in PROTOCOLS:
        numbers = report.protocols[protocol]
        for name, system in (
            ("P(sat.) vs satisfied share", numbers.systems_sentiment),
            ("P(sat.) vs overall", numbers.systems_overall_from_probability),
            ("regressor vs overall", numbers.systems_overall_from_regressor),
        ):
            print(f"{protocol:22} {name:28} r {number(system.pearson)}  rho {number(system.spearman)}")
    print(f"\nfinal strengths: {report.final_strengths}; check: {report.check}")


def _binary_rows(report: ValidationReport) -> list[tuple[str, str, BinaryReport]]:
    rows = [(p, split, report.protocols[p].sentiment[split]) for p in PROTOCOLS for split in SPLITS]
    baseline = report.protocols["grouped_5fold"].baseline_crs_rate or {}
    return rows + [("CRS-rate baseline", split, baseline[split]) for split in SPLITS if split in baseline]


def _correlation_rows(report: ValidationReport) -> list[tuple[str, str, str, CorrelationReport]]:
    rows = []
    for p in PROTOCOLS:
        for split in SPLITS:
            rows.append((p, split, "P(sat.)", report.protocols[p].overall_from_probability[split]))
            rows.append((p, split, "regressor", report.protocols[p].overall_from_regressor[split]))
    baseline = report.protocols["grouped_5fold"].baseline_crs_mean or {}
    return rows + [
        ("CRS-mean baseline", split, "CRS mean", baseline[split]) for split in SPLITS if split in baseline
    ]


def write(result: TrainingResult, out: Path) -> None:
    save_artifact(result.artifact, out)
    validation = out.with_name(out.name.removesuffix(".json") + ".validation.json")
    text = json.dumps(result.validation.model_dump(mode="json"), indent=1, allow_nan=False)
    validation.write_text(text + "\n", encoding="utf-8")
    print(f"wrote {relative(out)} and {relative(validation)}")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--dial", type=Path, default=FIXTURES / "crsarena_dial", help="CRSArena-Dial folder")
    parser.add_argument(
        "--eval",
        type=Path,
        default=FIXTURES / "crsarena_eval" / "crs_arena_eval.json.gz",
        help="CRSArena-Eval file",
    )
    parser.add_argument(
        "--out", type=Path, default=OUT, help="artifact path (validation JSON goes next to it)"
    )
    parser.add_argument("--resamples", type=int, default=2000, help="bootstrap resamples per interval")
    parser.add_argument("--ablation", action="store_true", help="compare feature sets instead of training")
    parser.add_argument("--embeddings", action="store_true", help="with --ablation: add embedding sets")
    args = parser.parse_args()

    started = time.perf_counter()
    try:
        dial, evaluated = load_sets(args.dial, args.eval)
    except CrsimError as exc:
        raise SystemExit(f"error: {exc}") from None
    dial.sources, evaluated.sources = [relative(args.dial)], [relative(args.eval)]
    config = TrainingConfig(resamples=args.resamples)
    if args.ablation:
        columns = f"{'AUC':>6} {'w. AUC':>6} {'r P(sat.)':>9} {'r reg.':>7} {'rho reg.':>8}"
        print(f"{'feature set':24} {'protocol':22} {columns}")
        for row in ablation(dial, evaluated, config, embeddings=args.embeddings):
            print(
                f"{row.feature_set:24} {row.protocol:22} {row.sentiment_roc_auc:6.3f} "
                f"{row.sentiment_within_crs_auc:6.3f} "
                f"{row.overall_pearson_from_probability:9.3f} {row.overall_pearson_from_regressor:7.3f} "
                f"{row.overall_spearman_from_regressor:8.3f}"
            )
    else:
        result = train(dial, evaluated, config, name=args.out.name.removesuffix(".json"))
        print_report(result.validation)
        write(result, args.out)
    print(f"done in {time.perf_counter() - started:.0f} s")


if __name__ == "__main__":
    main()
