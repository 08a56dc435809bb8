"""Store, below every reading stage: commit and HWM windows per group-partition, in flat arrays under one lock."""
