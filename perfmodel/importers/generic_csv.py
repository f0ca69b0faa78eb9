"""(placeholder: importer not written yet)."""
