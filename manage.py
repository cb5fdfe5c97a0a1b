#!/usr/bin/env python
from __future__ import annotations

import sys

from deeprepo_web.cli import manage

if __name__ == "__main__":
    manage(sys.argv[1:])
