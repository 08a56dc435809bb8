"""bench/ is a folder of scripts, not a package: its modules import each other by name, so its tests do too."""

import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[3] / "bench"
if str(BENCH) not in sys.path:
    sys.path.insert(0, str(BENCH))
