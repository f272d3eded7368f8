#!/usr/bin/env python3
"""Parses Prometheus text exposition (format 0.0.4) from stdin with prometheus_client's parser.

Usage: parse_metrics.py < metrics.txt

Prints one JSON document on stdout:

  {FAMILY: {"type": TYPE, "documentation": HELP, "samples": [[NAME, {LABEL: VALUE}, VALUE], ...]}}

FAMILY and TYPE are what prometheus_client.parser.text_string_to_metric_families reports: the
parser names a counter family without its "_total" suffix (family "tasker_steps_claimed", sample
"tasker_steps_claimed_total"), and a histogram's samples are its _bucket, _sum and _count lines.
Non-finite values are written as the strings "+Inf", "-Inf" and "NaN" (JSON has no numbers for
them). Exits 1 when the text does not parse, or when a family name appears twice.
"""

import json
import math
import sys

from prometheus_client.parser import text_string_to_metric_families


def number(value: float):
    if math.isnan(value):
        return "NaN"
    if math.isinf(value):
        return "+Inf" if value > 0 else "-Inf"
    return value


def main() -> int:
    text = sys.stdin.read()
    families = {}
    try:
        for family in text_string_to_metric_families(text):
            if family.name in families:
                raise ValueError(f"family {family.name} appears twice")
            families[family.name] = {
                "type": family.type,
                "documentation": family.documentation,
                "samples": [[s.name, dict(s.labels), number(s.value)] for s in family.samples],
            }
    except Exception as error:  # the parser raises ValueError and friends on malformed text
        print(f"parse_metrics.py: the text does not parse: {error!r}", file=sys.stderr)
        return 1
    json.dump(families, sys.stdout, indent=1, sort_keys=True)
    print()
    return 0


if __name__ == "__main__":
    sys.exit(main())
