"""Diagnose, over the verdicts: the page-cache hint and the noisy-neighbour join that explain why a group lags."""
