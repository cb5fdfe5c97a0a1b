"""Datasets out: JSONL of chat messages, Parquet, and a `datasets`-loadable folder (zipped).

Rows are built a batch at a time from a streamed id cursor: JSONL goes to the client as it is made;
Parquet is written a row group per batch to a temporary file, then streamed from disk. A million
rows never sit in memory.
"""

from __future__ import annotations

import json
import tempfile
import zipfile
from collections.abc import Iterable, Iterator
from itertools import islice
from typing import IO, Any

import pyarrow as pa
import pyarrow.parquet as pq

from deeprepo_web.search.chat import chat_rows

BATCH = 500

_CALL = pa.struct([("id", pa.string()), ("type", pa.string()),
                   ("function", pa.struct([("name", pa.string()), ("arguments", pa.string())]))])
_MESSAGE = pa.struct([("role", pa.string()), ("content", pa.string()), ("reasoning_content", pa.string()),
                      ("tool_call_id", pa.string()), ("tool_calls", pa.list_(_CALL))])
_TOOL = pa.struct([("type", pa.string()), ("function", pa.struct([("name", pa.string()),
                                                                   ("parameters", pa.string())]))])
SCHEMA = pa.schema([
    ("rollout_id", pa.int64()), ("run", pa.string()), ("run_name", pa.string()), ("step", pa.int64()),
    ("example", pa.string()), ("reward", pa.float64()), ("stop_condition", pa.string()),
    ("messages", pa.list_(_MESSAGE)), ("tools", pa.list_(_TOOL)), ("final_answer", pa.string()),
    ("labels", pa.list_(pa.string())),
])


def row_batches(ids: Iterable[int]) -> Iterator[list[dict[str, Any]]]:
    it = iter(ids)
    while batch := list(islice(it, BATCH)):
        yield chat_rows(batch)


def jsonl_chunks(ids: Iterable[int]) -> Iterator[bytes]:
    for rows in row_batches(ids):
        yield "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows).encode()


def _arrow_row(row: dict[str, Any]) -> dict[str, Any]:
    # Parquet needs one schema: tool parameters (any JSON schema) travel as a JSON string.
    tools = [{"type": t["type"], "function": {"name": t["function"]["name"],
                                              "parameters": json.dumps(t["function"]["parameters"])}}
             for t in row["tools"]]
    return {**row, "tools": tools}


def parquet_write(ids: Iterable[int], out: IO[bytes] | str) -> int:
    written = 0
    with pq.ParquetWriter(out, SCHEMA) as writer:
        for rows in row_batches(ids):
            writer.write_table(pa.Table.from_pylist([_arrow_row(r) for r in rows], schema=SCHEMA))
            written += len(rows)
    return written


CARD = """---
configs:
- config_name: default
  data_files:
  - split: train
    path: data/*.parquet
---
# {title}

Rollouts exported from deeprepo-web ({count} rows). Each row is one rollout: `messages` in the
OpenAI chat format with `tool_calls`, the `tools` it called, its `reward`, `labels` and provenance
(`run`, `step`, `example`). Load it with `datasets.load_dataset("<this folder>")`.

Query: `{query}`
"""


def hf_folder_zip(ids: Iterable[int], *, title: str, query: str) -> IO[bytes]:
    """A zip holding README.md (a dataset card with its data_files) and data/train-00000.parquet."""
    with tempfile.NamedTemporaryFile(suffix=".parquet") as part:
        count = parquet_write(ids, part.name)
        out = tempfile.TemporaryFile()
        with zipfile.ZipFile(out, "w", zipfile.ZIP_STORED) as z:
            z.writestr("dataset/README.md", CARD.format(title=title, count=count, query=query))
            z.write(part.name, "dataset/data/train-00000-of-00001.parquet")
    out.seek(0)
    return out
