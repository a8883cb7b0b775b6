#!/usr/bin/env python3
"""Validates a `moepack bench` report.json against its JSON Schema (draft-07).

Usage: validate_report.py SCHEMA REPORT

Prints every validation error as `JSON_PATH: message` (JSON_PATH like
$.requests[0].results.moepack.decode_tps). Exit status: 0 valid, 1 invalid (or a file that
cannot be read or parsed), 2 python3-jsonschema missing (packaging/setup.sh installs it).
Uses Debian's python3-jsonschema (4.10 in Debian 12): Draft7Validator.
"""
import json
import sys

try:
    from jsonschema import Draft7Validator
except ImportError:
    print("validate_report.py: the Python module jsonschema is missing "
          "(Debian: apt-get install python3-jsonschema; packaging/setup.sh installs it)", file=sys.stderr)
    sys.exit(2)


def json_path(parts):
    path = "$"
    for p in parts:
        path += f"[{p}]" if isinstance(p, int) else f".{p}"
    return path


def load(path, what):
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError) as e:
        print(f"{path}: cannot read the {what}: {e}", file=sys.stderr)
        sys.exit(1)


def main(argv):
    if len(argv) != 3:
        print("usage: validate_report.py SCHEMA REPORT", file=sys.stderr)
        return 1
    schema = load(argv[1], "schema")
    report = load(argv[2], "report")
    Draft7Validator.check_schema(schema)
    errors = sorted(Draft7Validator(schema).iter_errors(report), key=lambda e: list(map(str, e.absolute_path)))
    for e in errors:
        print(f"{argv[2]}: {json_path(e.absolute_path)}: {e.message} (schema: {json_path(e.absolute_schema_path)})")
    if errors:
        print(f"{argv[2]}: INVALID against {argv[1]} ({len(errors)} error(s))")
        return 1
    print(f"{argv[2]}: valid against {argv[1]}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
