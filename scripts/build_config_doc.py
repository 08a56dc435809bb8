"""Write docs/config.md from the config models (pulse/config/reference.py); run from the repository root."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from pulse.config.reference import DOC_PATH, reference


def main() -> None:
    target = Path(__file__).resolve().parent.parent / DOC_PATH
    target.write_text(reference(), encoding="utf-8")
    print(f"wrote {DOC_PATH}")


if __name__ == "__main__":
    main()
