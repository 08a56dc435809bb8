"""Judge (pure): facts -> one `Section` per question (OK/WARN/CRIT/UNKNOWN/INFO), the overall status and exit code;
no I/O, so every verdict is tested from hand-made facts."""
