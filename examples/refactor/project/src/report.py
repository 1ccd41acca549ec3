"""Summarises inventory records."""

from reader import fetch_data


def total_quantity(path):
    rows = fetch_data(path)
    return sum(int(row["quantity"]) for row in rows)
