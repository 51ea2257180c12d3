"""A pass of `crsim evaluate` over a dialogue file (`FileScoring`), and its way of scoring dialogues
one at a time as they are read when no evaluator awaits (`DialogueStream`).

Each dialogue's metric outcomes, per-turn curve values and counts are taken and the dialogue let go
before the next is read; a batch keeps only its score lines (redacted where a part may hold a secret)
and the outcomes the summaries fold at its end. What it writes is what `score_all` over the batch
and `SummaryBuilder.add` of its records write (`tests/eval/test_evaluate_stream.py`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path

from crsim.core.collector import young_collections_only
from crsim.core.progress import Progress
from crsim.core.secrets import redact_json_lines, secret_check
from crsim.eval.curves import CurveBuilder
from crsim.eval.metrics.base import Evaluator, Metric
from crsim.eval.metrics.structure import first_without_acts, forget_readings, readings_shared
from crsim.eval.scores import (
    GroupKey,
    Outcome,
    ScoreRecord,
    dialogue_outcomes,
    kept_scores,
    score_dialogue,
    trusted_record,
)
from crsim.eval.scoring import AnnotationCounts, DialogueAnnotator, score_all
from crsim.eval.summaries import SummaryBuilder
from crsim.model.dialogue import Dialogue
from crsim.model.io import iter_dialogues
from crsim.model.run_folder.scores import ScoresAppender, line_head, metric_part, score_line, scores_writer

__all__ = ["DialogueStream", "FileScoring"]

#: Dialogues read, scored and written at a time: memory stays flat however large the run.
BATCH = 500

#: Missing reasons whose `secret_check` a stream remembers.
_REASONS_KEPT = 1000


class DialogueStream:
    """Scores dialogues one at a time as they are read, when no evaluator awaits: each dialogue's
    outcomes, curves and counts are taken and the dialogue let go before the next is read (a batch
    held whole costs more to read and score), keeping for a batch only the score lines and the
    outcomes the summary folds at the batch's end. The same lines and summaries as `score_all` over
    the batch and `SummaryBuilder.add` of its records."""

    def __init__(
        self,
        metrics: list[Metric],
        score_unevaluable: bool,
        annotating: bool,
        builder: SummaryBuilder,
        curves: CurveBuilder,
        progress: Progress | None,
        on_batch: Callable[[Sequence[Dialogue]], None] | None,
    ) -> None:
        self.metrics = metrics
        self.labels = [m.label for m in metrics]
        self._parts = [metric_part(label) for label in self.labels]
        self._unevaluable = score_unevaluable
        self._annotating = annotating
        self._builder, self._curves = builder, curves
        self._progress, self._on_batch = progress, on_batch
        #: Score lines ready to write: redacted where a part may hold a secret (`secret_check` of each
        #: dialogue's ids, of each missing reason and error; the labels once, here).
        self._lines: list[str] = []
        self._check = secret_check()
        self._secret = any(self._check(label) for label in self.labels)
        self._reasons: dict[str, bool] = {}
        self._rows: list[tuple[GroupKey, str, list[Outcome]]] = []
        self._ended: list[str | None] = []
        self.scored = 0

    def score(self, dialogue: Dialogue) -> bool:
        """Score a dialogue, unless an annotator is to fill in acts it lacks (then False: it goes
        through `score_all` with the rest of its batch). Called inside `readings_shared`: the
        dialogue's readings are forgotten once it is scored."""
        if self._annotating and first_without_acts(dialogue) is not None:  # `needs_acts`
            return False
        scored = dialogue_outcomes(dialogue, self.metrics, self.labels, score_unevaluable=self._unevaluable)
        if scored is None:  # its termination cannot be read: each metric records why
            records = [score_dialogue(dialogue, m, score_unevaluable=self._unevaluable) for m in self.metrics]
            ended = records[0].termination if records else None
            outcomes = [(r.value, r.missing_reason, r.error) for r in records]
        else:
            ended, outcomes = scored
        self._curves.add_one(dialogue)
        forget_readings()
        head = line_head(dialogue.id, dialogue.crs_id, dialogue.simulator_id, ended)
        secret, failed = self._secret or self._check(head), False
        for _, reason, error in outcomes:
            if error is not None:
                failed = True
                secret = secret or self._check(error)
            if reason is not None and not secret:
                secret = self._may_hold(reason)
        lines = [] if secret else self._lines
        for part, (value, reason, error) in zip(self._parts, outcomes, strict=True):
            lines.append(score_line(head, part, value, reason, error))
        if secret:
            self._lines.append(redact_json_lines("".join(lines)))
        self._rows.append(((dialogue.crs_id, dialogue.simulator_id), dialogue.id, outcomes))
        self._ended.append(ended)
        self._builder.add_dialogue(dialogue)
        if self._progress is not None:
            self._progress.advance(error=failed)
        if self._on_batch is not None:
            self._on_batch([dialogue])
        self.scored += 1
        return True

    def _may_hold(self, reason: str) -> bool:
        """`secret_check` of a missing reason, remembered for the reasons met so far (a metric gives
        the same few reasons again and again)."""
        known = self._reasons.get(reason)
        if known is None:
            known = self._check(reason)
            if len(self._reasons) < _REASONS_KEPT:
                self._reasons[reason] = known
        return known

    def text(self) -> str:
        """The score lines of the dialogues scored since the last call, redacted."""
        text = "".join(self._lines)
        self._lines.clear()
        return text

    def fold(self) -> None:
        """Fold the outcomes kept since the last fold into the summaries."""
        self._builder.add_outcomes(self.labels, self._rows)
        self._rows.clear()
        self._ended.clear()

    def records(self) -> list[ScoreRecord]:
        """The outcomes kept since the last fold as score records (for `SummaryBuilder.add` of a batch
        that also holds records of `score_all`), forgetting them."""
        records = [
            trusted_record(dialogue_id, key[0], key[1], ended, label, value, reason, error)
            for (key, dialogue_id, outcomes), ended in zip(self._rows, self._ended, strict=True)
            for label, (value, reason, error) in zip(self.labels, outcomes, strict=True)
        ]
        self._rows.clear()
        self._ended.clear()
        return records


@dataclass
class FileScoring:
    """One pass of `crsim evaluate` over a dialogue file: its metrics, what it folds the outcomes into,
    and what it learns on the way (records read, labels scored, labels of an earlier file kept)."""

    metrics: list[Metric | Evaluator]
    concurrency: int  #: dialogues scored at once when an evaluator awaits (`score_all`)
    score_unevaluable: bool
    annotator: DialogueAnnotator | None
    builder: SummaryBuilder
    curves: CurveBuilder
    progress: Progress | None
    on_batch: Callable[[Sequence[Dialogue]], None] | None
    counts: AnnotationCounts = field(default_factory=AnnotationCounts)
    held: int = 0  #: records read: the whole file once the scoring is done
    rescored: set[str] = field(default_factory=set)
    scored_ids: set[str] = field(default_factory=set)
    kept_labels: dict[str, None] = field(default_factory=dict)
    earlier_labels: dict[str, None] = field(default_factory=dict)

    async def run(self, dialogues_path: Path, scores_path: Path, *, merging: bool) -> None:
        """Score every dialogue, batch by batch, into a new scores file; then, when `merging`, append
        the earlier file's records of the metrics not scored again."""
        # one block of shared readings: the stream forgets each dialogue's once it is scored
        with scores_writer(scores_path) as write, young_collections_only() as tick, readings_shared():
            dialogues = iter_dialogues(dialogues_path)
            stream = self._stream()
            while await self._batch(dialogues, stream, write, merging=merging):
                tick()
            if merging:  # earlier scores of other metrics stay
                self._keep_earlier(scores_path, write)
                await asyncio.sleep(0)  # a cancellation point when no evaluator awaits anything

    def _stream(self) -> DialogueStream | None:
        """With no evaluator to await, dialogues are scored one at a time as they are read; a batch
        goes through `score_all` from a dialogue that needs acts (the annotator's concurrency)."""
        if any(not isinstance(m, Metric) for m in self.metrics):
            return None
        if self.annotator is not None:
            self.counts.annotator = self.annotator.name  # as `score_all` sets it
        return DialogueStream(
            [m for m in self.metrics if isinstance(m, Metric)],
            self.score_unevaluable,
            self.annotator is not None,
            self.builder,
            self.curves,
            self.progress,
            self.on_batch,
        )

    async def _batch(
        self,
        dialogues: Iterator[Dialogue],
        stream: DialogueStream | None,
        write: ScoresAppender,
        *,
        merging: bool,
    ) -> bool:
        """Read, score and write the next batch; False when the file holds no more."""
        batch: list[Dialogue] = []
        read = 0
        for dialogue in islice(dialogues, BATCH):
            read += 1
            if stream is None or batch or not stream.score(dialogue):
                batch.append(dialogue)
            if merging:
                self.scored_ids.add(dialogue.id)
        if not read:
            return False
        self.held += read
        if stream is not None:
            write.lines(stream.text(), redacted=True)
        if batch:  # the metrics and curves read each dialogue once
            records = await score_all(
                batch,
                self.metrics,
                annotator=self.annotator,
                concurrency=self.concurrency,
                counts=self.counts,
                score_unevaluable=self.score_unevaluable,
                progress=self.progress,
            )
            self.curves.add(batch)
            forget_readings()
            write(records)
            self.builder.add([*(stream.records() if stream else ()), *records], batch)
            if self.on_batch is not None:
                self.on_batch(batch)
            self.rescored.update(r.metric for r in records)
        elif stream is not None:
            stream.fold()
        if stream is not None and stream.scored:
            self.rescored.update(stream.labels)
        return True

    def _keep_earlier(self, scores_path: Path, write: ScoresAppender) -> None:
        """Append the earlier scores file's records of the metrics not scored again, for the
        dialogues scored, and fold them into the summaries."""
        earlier = kept_scores(
            scores_path, rescored=self.rescored, dialogue_ids=self.scored_ids, labels=self.earlier_labels
        )
        for kept in earlier:
            write(kept)
            # Their dialogues were added above: no dialogues here (not None), so the counts,
            # terminations and users stay those the dialogues gave.
            self.builder.add(kept, ())
            self.kept_labels.update(dict.fromkeys(r.metric for r in kept))
