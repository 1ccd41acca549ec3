"""Command line entry point of the inventory tool."""

import sys

from reader import fetch_data
from report import total_quantity


def main():
    path = sys.argv[1]
    print(f"{len(fetch_data(path))} records, {total_quantity(path)} items")


if __name__ == "__main__":
    main()
