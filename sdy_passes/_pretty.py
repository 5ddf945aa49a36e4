"""Pretty (custom assembly) forms: one parser and one printer per op."""

PRETTY_PRINTERS = {}
