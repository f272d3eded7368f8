"""The chaos suite behind scripts/chaos (issue #14): processes, load, faults, hostile inputs, verdict."""
