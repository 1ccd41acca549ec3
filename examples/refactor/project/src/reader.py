"""Reads inventory records from a CSV file."""

import csv


def fetch_data(path):
    """Return the rows of the CSV file at `path` as dictionaries."""
    with open(path, newline="") as handle:
        return list(csv.DictReader(handle))
