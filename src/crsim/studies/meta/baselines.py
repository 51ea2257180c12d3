"""The published CRSArena-Eval baselines (LLM-Direct, LLM-CoT+ICL, UniEval, G-Eval, FACE w/o train,
FACE): Pearson r and Spearman rho per split and aspect, shipped as `data/baselines.json`.

In the file the splits are `CRSArena-Eval_RD` (ReDial) and `CRSArena-Eval_KG` (OpenDialKG) and the
overall aspect is `dialog_overall`; a null means the paper reports no number (UniEval has no
counterpart for three aspects).
"""

from __future__ import annotations

from importlib.resources import files
from pathlib import Path

from pydantic import BaseModel

from crsim.core.errors import DataError
from crsim.datasets.files import read_json
from crsim.studies.meta.aspects import ASPECTS, canonical_aspect

SPLIT_KEYS = {"CRSArena-Eval_RD": "redial", "CRSArena-Eval_KG": "opendialkg"}


class Scores(BaseModel):
    """A published pair of correlations (None where not reported)."""

    pearson: float | None
    spearman: float | None


#: split -> evaluator name -> aspect -> scores, evaluators in file order.
Baselines = dict[str, dict[str, dict[str, Scores]]]


def default_baselines_path() -> Path:
    return Path(str(files("crsim.studies.meta") / "data" / "baselines.json"))


def _score(value: object, path: Path, where: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise DataError(f"expected a number or null, got {value!r}", path=str(path), field=where)
    return float(value)


def load_baselines(path: str | Path | None = None) -> Baselines:
    """The published numbers by split, evaluator and canonical aspect; errors name the field."""
    path = None if path is None else Path(path)
    source = path or default_baselines_path()
    data = read_json(source)
    if not isinstance(data, dict):
        raise DataError("expected a JSON object keyed by split", path=str(source))
    out: Baselines = {}
    for split_key, evaluators in data.items():
        split = SPLIT_KEYS.get(split_key)
        if split is None:
            raise DataError(
                f"unknown split; expected one of {', '.join(SPLIT_KEYS)}", path=str(source), field=split_key
            )
        if not isinstance(evaluators, dict):
            raise DataError("expected an object keyed by evaluator", path=str(source), field=split_key)
        out[split] = {}
        for name, aspects in evaluators.items():
            if not isinstance(aspects, dict):
                raise DataError(
                    "expected an object keyed by aspect", path=str(source), field=f"{split_key}.{name}"
                )
            table: dict[str, Scores] = {}
            for aspect_name, scores in aspects.items():
                where = f"{split_key}.{name}.{aspect_name}"
                aspect = canonical_aspect(aspect_name)
                if aspect is None or not isinstance(scores, dict):
                    raise DataError(
                        f"expected one of the aspects {', '.join(ASPECTS)} with pearson_r and spearman_rho",
                        path=str(source),
                        field=where,
                    )
                table[aspect] = Scores(
                    pearson=_score(scores.get("pearson_r"), source, f"{where}.pearson_r"),
                    spearman=_score(scores.get("spearman_rho"), source, f"{where}.spearman_rho"),
                )
            out[split][name] = table
    return out
