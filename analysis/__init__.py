"""Pure functions over the store: tables, figures, reports."""
