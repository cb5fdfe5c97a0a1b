"""Field types every API schema shares."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated

from pydantic import Field, PlainSerializer

# Postgres integer columns: out-of-range numbers are a 422 naming the field, not a database error.
Int32 = Annotated[int, Field(ge=-(2**31), le=2**31 - 1)]
Int64 = Annotated[int, Field(ge=-(2**63), le=2**63 - 1)]
Count = Annotated[int, Field(ge=0, le=2**63 - 1)]

# Times go out as Python's ISO 8601 (microseconds, +00:00), as they always have.
Iso = Annotated[datetime, PlainSerializer(lambda d: d.isoformat(), return_type=str)]
