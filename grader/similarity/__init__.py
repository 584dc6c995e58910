"""Similarity between a class's submissions: winnowed fingerprints over normalised tokens, shared
starter code taken out, every pair scored, and a report that finds similarity, never misconduct."""
