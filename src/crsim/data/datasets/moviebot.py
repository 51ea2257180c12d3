"""IAI MovieBot dialogues annotated by UserSimCRS (`moviebot/annotated_dialogues.json`).

Eight conversations of crowd workers with IAI MovieBot v1, in DialogueKit JSON, labelled with the
CIR6 scheme (`DISCLOSE`, `INQUIRE.ELICIT`, `REVEAL`, `NOTE.LIKE`, ...) and GENRE/KEYWORD/TITLE/
DIRECTOR slot values. Intents map through `intents.MOVIEBOT_*`; the originals stay in
`annotations["labels"]`. Titles are slot values only (the file has no item ids), so
`recommended_items` stays empty and the recommended titles are the `title` slots of `recommend`
acts. The file writes conversation ids in quotes ("\\"39GH...\\""); dialogue ids drop them.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

from crsim.data.datasets.base import DatasetReader, RawRecord, dataset
from crsim.data.datasets.dialoguekit import convert_record
from crsim.data.datasets.files import iter_files, iter_json_array
from crsim.model.dialogue import Dialogue


@dataset("moviebot")
class MovieBotReader(DatasetReader):
    """MovieBot's annotated dialogues: `annotated_dialogues.json` or the folder holding it."""

    description = "IAI MovieBot annotated dialogues (UserSimCRS data/datasets/moviebot)"

    def records(self, src: Path) -> Iterator[RawRecord]:
        for path in iter_files(src):
            yield from iter_json_array(path)

    def convert(self, record: RawRecord) -> Dialogue:
        return convert_record(
            record, dataset_name="moviebot", split="annotated", scheme="moviebot", reader=self
        )
